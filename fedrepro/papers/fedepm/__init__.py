"""The fedepm paper: figures, claims and the analysis they share."""
