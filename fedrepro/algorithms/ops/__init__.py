"""Numerical building blocks of the algorithms' update rules: robust aggregators
(:mod:`.aggregators`: Krum, geometric median, ...), FedEPM's elastic-net server step
(:mod:`.elastic_net`) and FRPG's Huber penalty and proximal worker step (:mod:`.huber_prox`)."""
