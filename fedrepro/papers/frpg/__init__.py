"""The frpg paper: figures, claims and the analysis they share."""
