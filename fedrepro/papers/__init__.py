"""One package per paper: ``figures`` (its figure and table specs), ``claims`` (checks of its
claims, evaluated by :mod:`fedrepro.claims`) and ``analysis`` (quantities both use; claims never
import figure modules). The experiments themselves are data: ``workflow/papers/<paper>.yaml``."""
