"""The one driver that runs an algorithm on a problem, and what it applies around it.

:mod:`.driver` runs every algorithm (:func:`.driver.drive`) under a schedule: synchronous rounds
(:class:`.driver.Rounds`: the sampler or replayed selections, an optional virtual clock from the delay
models of :mod:`.delays`) or the event-driven asynchronous schedule (:class:`.driver.Events`: a virtual
clock, S active workers, bounded staleness, master processing time). Under both, the algorithm plugs in
through one contract (a client job returning uploads of a declared kind, a server update), receives a
:class:`fedrepro.core.context.RunContext` (seeded streams by purpose), and every upload passes the one
client-to-server channel (:mod:`.channel`: privacy mechanisms :mod:`.privacy`, the adversary
:mod:`.attacks`, aggregators :mod:`.aggregation`); the driver makes the trace records, the stop tests
(:func:`.stopping.stop_check`, the rules of :mod:`.stopping`) and the :class:`.result.RunResult` that
:mod:`fedrepro.experiments.results` turns into Parquet rows. :mod:`.loop` (``simulate``) and
:mod:`.async_loop` (``simulate_async``) are the driver with each schedule. Replayed randomness
(:mod:`.replay`) replaces the sampler's and the noise streams' draws. :mod:`.accounting` states the
(epsilon, delta) that rounds of a (Poisson-subsampled) Gaussian mechanism spend (client-level DP,
DP-FedAvg), with the ``dp-accounting`` library's accountants; :mod:`.capabilities` generates the matrix
of what composes."""
