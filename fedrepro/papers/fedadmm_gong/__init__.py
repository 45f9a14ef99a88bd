"""The fedadmm_gong paper (Gong, Li & Freris, ICDE 2022): figures, tables, claims and the analysis they share."""
