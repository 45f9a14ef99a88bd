"""One package per paper: ``figures`` (its figure and table specs), ``claims`` (checks of its
claims, evaluated by :mod:`fedrepro.claims`) and ``analysis`` (quantities both use; claims never
import figure modules). Its experiments and claims are data in the same folder (``experiments.yaml``, ``claims.yaml``), its decisions in ``FIDELITY.md``; :mod:`.registry` discovers the papers and is the one way to their modules."""
