"""Drivers that run an algorithm on a problem, and what they apply around it.

:mod:`.loop` is the synchronous driver (rounds of sample -> client_update -> mechanism -> attack
-> receive, with evaluation and stopping; the algorithm is a
:class:`fedrepro.algorithms.sync_base.SyncAlgorithm`); :mod:`.async_loop` is the asynchronous, event-driven
driver next to it (a virtual clock, the delay models of :mod:`.delays`, S active workers, bounded
staleness, master processing time; the update rule is a
:class:`fedrepro.algorithms.async_base.AsyncAlgorithm`), with the same contracts: a
:class:`fedrepro.core.context.RunContext` passed to the update rule's hooks, seeded streams by
purpose, trace records, the stop rules and the one stop check (:func:`.stopping.stop_check`) of
:mod:`.stopping`, and a :class:`.result.RunResult` that
:mod:`fedrepro.experiments.results` turns into Parquet rows. Synchronous methods take their round
durations from the same delay models (:func:`.delays.sync_round_duration`). Privacy mechanisms
(:mod:`.privacy`), Byzantine attacks (:mod:`.attacks`) and replayed randomness (:mod:`.replay`) plug
into the synchronous driver, never into an algorithm. :mod:`.accounting` states the (epsilon, delta)
that rounds of a (Poisson-subsampled) Gaussian mechanism spend (client-level DP, DP-FedAvg), with
the ``dp-accounting`` library's accountants."""
