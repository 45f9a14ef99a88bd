"""Numerical building blocks of the algorithms' update rules: robust aggregators
(:mod:`.aggregators`: Krum, geometric median, ...), FedEPM's elastic-net server step
(:mod:`.elastic_net`), FRPG's Huber penalty and proximal worker step (:mod:`.huber_prox`) and the
DRO master's worst-case mixture over an uncertainty set (:mod:`.uncertainty_sets`: CD-norm, box,
ellipsoid, polyhedron, KL, Wasserstein-1, with Table 1's complexity bounds), the simplex projection
and DRFA-Prox's mixture step (:mod:`.simplex`), priors over the workers (:mod:`.priors`), and the
compiled passes of FedADMM's local step (:mod:`.admm_step`), ASPIRE's master and worker vector work
(:mod:`.aspire_step`) and FRPG's worker step (:mod:`.frpg_step`), each bit-identical to its numpy expressions."""
