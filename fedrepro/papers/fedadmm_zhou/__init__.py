"""The fedadmm_zhou paper: figures, claims and the analysis they share."""
