"""Client partitioners: which training samples each federated client holds.

Every partitioner is a pure function of (sample count, labels or group arrays,
parameters, seed).  It returns a list of ``m`` int64 index arrays ``parts``,
``parts[i]`` holding the sample indices of client ``i``, **each sorted
ascending** (no rule of the five papers depends on the order of samples inside a
client: full-batch methods ignore it and minibatches are drawn by the sampling
stream).  Parts are pairwise disjoint.  Every sample is assigned except by the
rules that select data (``one_class`` with a ``classes`` subset, ``pair_digit``
with ``drop_classes``, ``natural`` with ``order``, ``location_mix``); the shard
rules never drop a remainder, they refuse sizes that do not divide (or spread
it with ``remainder="spread"``).  No client is empty (impossible requests raise
``ValueError``), except ``dirichlet`` with ``min_size=0``.

Random numbers come only from ``fedrepro.core.rng.stream(seed, "partition", *keys,
tag)`` where ``tag`` is fixed per rule; ``seed`` may be an int or a sequence of
non-negative ints ``(seed, *keys)`` (e.g. ``(base, instance)``).  Inputs are
never modified.

Registered rules (``PARTITIONERS``; ``partition(name, ...)`` dispatches):

* ``iid`` -- random permutation split into ``m`` near-equal chunks (Gong et al.
  ``mnist_iid``; FRPG ``iid`` alternative).
* ``random_sizes`` -- Zhou & Li size rules: ``rule="cuts"`` (random cut points,
  FedADMM Ex. 5.2 / FedEPM), ``rule="uniform"`` (d_i ~ U{low..high}, FedADMM
  Ex. 5.1), ``rule="given"``; ``random_cuts`` and ``sizes_uniform`` fix ``rule``.
* ``label_shards`` -- McMahan shards: sort by label, ``m*k`` shards, ``k`` each.
* ``dirichlet`` -- per-class Dirichlet(alpha) proportions (Hsu et al. 2019).
* ``natural`` -- one client per distinct group value (or key combination).
* ``one_class`` -- one class per client (ASPIRE Fashion-MNIST).
* ``pair_digit`` -- FRPG / RSA: workers 2c, 2c+1 share class c;
  ``pair_half_digits``: pair c holds classes c..c+4 (mod 10).
* ``imbalanced_shards`` -- FedADMM (Gong et al.) Table VI shard-group rule.
* ``location_mix`` -- ASPIRE SHL: frames split equally, body location ~ mix row.

Helpers: :func:`client_ids` (sample -> client, -1 unassigned), :func:`sizes`,
:func:`class_counts`, :func:`group_keys`, :func:`uniform_client_sizes`,
:func:`random_cut_sizes`.
"""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from fedrepro.data.partition._common import class_counts, client_ids, sizes
from fedrepro.data.partition.group_rules import group_keys, location_mix, natural
from fedrepro.data.partition.label_rules import (dirichlet, imbalanced_shards, label_shards, one_class, pair_digit,
                                                 pair_half_digits)
from fedrepro.data.partition.size_rules import (MIN_FRAC_PRESETS, iid, random_cut_sizes, random_cuts, random_sizes,
                                                sizes_uniform, uniform_client_sizes)

__all__ = [
    "PARTITIONERS", "partition", "client_ids", "sizes", "class_counts", "group_keys",
    "uniform_client_sizes", "random_cut_sizes", "MIN_FRAC_PRESETS",
    "iid", "random_sizes", "random_cuts", "sizes_uniform", "label_shards", "dirichlet",
    "natural", "one_class", "pair_digit", "pair_half_digits", "imbalanced_shards",
    "location_mix",
]


# --------------------------------------------------------------------------- registry
PARTITIONERS: dict[str, Callable[..., list[np.ndarray]]] = {
    "iid": iid,
    "random_sizes": random_sizes,
    "random_cuts": random_cuts,
    "sizes_uniform": sizes_uniform,
    "label_shards": label_shards,
    "dirichlet": dirichlet,
    "natural": natural,
    "one_class": one_class,
    "pair_digit": pair_digit,
    "pair_half_digits": pair_half_digits,
    "imbalanced_shards": imbalanced_shards,
    "location_mix": location_mix,
}


# Parameter spellings of the spec config sketches, accepted by ``partition``.
_ALIASES = {
    "random_sizes": {"min_size_frac": "min_frac"},
    "random_cuts": {"min_size_frac": "min_frac"},
    "label_shards": {"shards_per_client": "k"},
}


def partition(name: str, *, n_samples: int | None = None, labels=None, groups=None, seed,
              **params) -> list[np.ndarray]:
    """Run the partitioner registered as ``name`` (see :data:`PARTITIONERS`).

    Rules of the sample count (``iid``, ``random_sizes``, ``random_cuts``,
    ``sizes_uniform``) take ``n_samples`` (or ``len(labels)``/``len(groups)``);
    label rules need ``labels``; ``natural``/``location_mix`` need ``groups``.
    ``params`` are the rule's keyword parameters (``m``, ``k``, ``alpha`` ...).
    Unknown names, unknown parameters and bad values raise ``ValueError`` naming
    the parameter, the value and what is allowed.

    Returns a list of ``m`` sorted int64 index arrays.
    """
    if name not in PARTITIONERS:
        raise ValueError(f"unknown partitioner name={name!r}; allowed: {', '.join(PARTITIONERS)}")
    fn = PARTITIONERS[name]
    sig = inspect.signature(fn)
    data_arg = next(iter(sig.parameters))
    for alias, canon in _ALIASES.get(name, {}).items():
        if alias in params:
            if canon in params:
                raise ValueError(f"{name}: both {alias!r} and {canon!r} given; use {canon!r}")
            params[canon] = params.pop(alias)
    allowed = [p for p in sig.parameters if p not in (data_arg, "seed")]
    unknown = [p for p in params if p not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {unknown}; allowed: {', '.join(allowed)}")
    required = [p for p in allowed if sig.parameters[p].default is inspect.Parameter.empty
                and p not in params]
    if required:
        raise ValueError(f"{name}: missing parameter(s) {required}; allowed: {', '.join(allowed)}")
    if data_arg == "n_samples":
        lengths = {len(np.asarray(a)) for a in (labels,) if a is not None}
        if groups is not None and not isinstance(groups, dict):
            lengths.add(len(np.asarray(groups)))
        if n_samples is None:
            if len(lengths) != 1:
                raise ValueError(f"{name}: n_samples is required (or labels= of length n_samples)")
            n_samples = lengths.pop()
        elif lengths and lengths != {n_samples}:
            raise ValueError(f"{name}: n_samples={n_samples} but labels/groups have length "
                             f"{sorted(lengths)}")
        data = n_samples
    elif data_arg == "labels":
        if labels is None:
            raise ValueError(f"partitioner {name!r} needs labels= (one label per sample)")
        if n_samples is not None and len(np.asarray(labels)) != n_samples:
            raise ValueError(f"{name}: n_samples={n_samples} but len(labels)={len(labels)}")
        data = labels
    else:
        if groups is None:
            raise ValueError(f"partitioner {name!r} needs groups= (array or dict of arrays)")
        data = groups
    return fn(data, seed=seed, **params)
