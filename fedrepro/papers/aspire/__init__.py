"""The aspire paper (Jiao, Yang & Song, spec 002): static tables and figures (Tables 1, 2, 5, Fig. 1)."""
