"""Drivers that run an algorithm on a problem, and what they apply around it.

:mod:`.loop` is the synchronous driver (rounds of sample -> client_update -> mechanism -> attack
-> receive, with evaluation and stopping); an asynchronous, event-driven driver sits next to it
with the same contracts: a :class:`fedrepro.core.context.RunContext` passed to the update rule's
hooks, seeded streams by purpose, trace records, the stop rules of :mod:`.stopping`, and a
:class:`.result.RunResult` that :mod:`fedrepro.experiments.results` turns into Parquet rows.
Privacy mechanisms (:mod:`.privacy`), Byzantine attacks (:mod:`.attacks`) and replayed randomness
(:mod:`.replay`) plug into the drivers, never into an algorithm."""
