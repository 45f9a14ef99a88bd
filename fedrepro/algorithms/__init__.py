"""Algorithm registry. Adding an algorithm is one module plus one line here."""
from __future__ import annotations

import importlib

from fedrepro.algorithms.async_base import AsyncAlgorithm
from fedrepro.algorithms.base import Algorithm, RunContext, State
from fedrepro.algorithms.sync_base import SyncAlgorithm

# registry name -> "module:Class"
_REGISTRY = {
    # Zhou & Li, "Federated Learning via Inexact ADMM"
    "fedadmm": "fedrepro.algorithms.fedadmm:FedADMM",
    "fedavg": "fedrepro.algorithms.fedavg:FedAvg",
    "fedprox": "fedrepro.algorithms.fedprox:FedProx",
    "fedalt": "fedrepro.algorithms.fedalt:FedAlt",
    "fedsim": "fedrepro.algorithms.fedsim:FedSim",
    # Zhou & Li, "Exact Penalty Method for Federated Learning"
    "fedepm": "fedrepro.algorithms.fedepm:FedEPM",
    "sfedavg": "fedrepro.algorithms.sfedavg:SFedAvg",
    "sfedprox": "fedrepro.algorithms.sfedprox:SFedProx",
    # Byzantine-resilient (FRPG / LFRPG) and baselines
    "frpg": "fedrepro.algorithms.frpg:FRPG",
    "lfrpg": "fedrepro.algorithms.lfrpg:LFRPG",
    "rsa": "fedrepro.algorithms.rsa:RSA",
    "krum": "fedrepro.algorithms.krum:Krum",
    "geomed": "fedrepro.algorithms.geomed:GeoMed",
    "sgd_mean": "fedrepro.algorithms.sgd_mean:SGDMean",
    # neural models: local epochs of minibatch SGD (McMahan et al. 2017; spec 003)
    "fedavg_sgd": "fedrepro.algorithms.fedavg_sgd:FedAvgSGD",
    # Gong, Li & Freris, "FedADMM: A Robust Federated Deep Learning Framework" (spec 003) and its baselines
    "fedadmm_gong": "fedrepro.algorithms.fedadmm_gong:FedADMMGong",
    "fedprox_sgd": "fedrepro.algorithms.fedprox_sgd:FedProxSGD",
    "fedsgd": "fedrepro.algorithms.fedsgd:FedSGD",
    "scaffold": "fedrepro.algorithms.scaffold:Scaffold",
    # Jiao, Yang & Song, "Federated DRO with non-convex objectives" (spec 002): asynchronous update rules
    "aspire": "fedrepro.algorithms.aspire:Aspire",
    "aspire_cp": "fedrepro.algorithms.aspire:AspireCP",
    "aspire_sync": "fedrepro.algorithms.aspire:AspireSync",
    "aspire_per": "fedrepro.algorithms.aspire:AspirePer",
    "aspire_adp": "fedrepro.algorithms.aspire:AspireADP",
    "mix_even": "fedrepro.algorithms.aspire:MixEven",
    # its synchronous baselines (spec 002 §3.4-3.7)
    "fedavg_steps": "fedrepro.algorithms.fedavg_steps:FedAvgSteps",
    "afl": "fedrepro.algorithms.afl:AFL",
    "drfa_prox": "fedrepro.algorithms.drfa_prox:DRFAProx",
    "individual": "fedrepro.algorithms.individual:Individual",
}


def algorithm_names(available_only: bool = True) -> list[str]:
    names = sorted(_REGISTRY)
    if available_only:
        names = [n for n in names if _importable(n)]
    return names


def _importable(name: str) -> bool:
    try:
        algorithm_class(name)
        return True
    except (ImportError, AttributeError):
        return False


def algorithm_class(name: str) -> type[Algorithm]:
    if name not in _REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; allowed: {', '.join(sorted(_REGISTRY))}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def renamed_message(name: str, old: str, new: tuple, value=None, fix: str | None = None) -> str:
    """The error for algorithm ``name`` given its parameter's former name ``old`` (``new``: (name now, why));
    ``fix``: what to write instead (default ``<name now>: <value>``)."""
    from fedrepro.core.context import RUN_DEFAULTS

    now, why = new
    fix = fix or (f"{now}: {value!r}" if value is not None else now)
    out = f"algorithm {name!r} has no parameter {old!r} ({why}): write {fix} for {name}'s {now}"
    if old in RUN_DEFAULTS:
        out += f"; for the run setting {old}, set it on the experiment (or in grid:), not in algorithms.{name}"
    return out


def make_algorithm(name: str, **params) -> Algorithm:
    """Instantiate ``name`` with ``params``; unknown parameters are an error naming them."""
    import dataclasses

    cls = algorithm_class(name)
    for old in params:
        if old in cls.renamed:
            raise ValueError(renamed_message(name, old, cls.renamed[old], params[old]))
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"algorithm {name!r} has no parameter(s) {unknown}; its parameters are {sorted(known)}")
    return cls(**params)


__all__ = ["Algorithm", "AsyncAlgorithm", "RunContext", "State", "SyncAlgorithm", "algorithm_names", "algorithm_class",
           "make_algorithm"]
