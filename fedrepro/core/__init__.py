"""Primitives every layer uses: seeded streams by purpose (:mod:`.rng`), the run context passed to
every algorithm hook and the run settings defined once (:mod:`.context`), client sampling
(:mod:`.sampling`), per-client state stores (:mod:`.store`), declared parameter constraints
(:mod:`.params`) and unit-noise generators (:mod:`.noise`). Imports nothing else of fedrepro."""
