"""fedrepro: faithful, fast reproductions of federated-learning optimization papers."""

__version__ = "0.1.0"
