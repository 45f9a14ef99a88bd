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
    "PARTITIONERS", "partition", "partition_spec", "check_partition_spec", "partition_input", "client_ids", "sizes", "class_counts", "group_keys",
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


def partition_input(name: str) -> str:
    """What the rule ``name`` partitions: ``"n_samples"`` (a sample count), ``"labels"`` (one label per
    sample) or ``"groups"`` (group arrays)."""
    if name not in PARTITIONERS:
        raise ValueError(f"unknown partitioner name={name!r}; allowed: {', '.join(PARTITIONERS)}")
    return next(iter(inspect.signature(PARTITIONERS[name]).parameters))


def _checked_params(name: str, params: dict, given: tuple = ()) -> dict:
    """``params`` of rule ``name`` with the aliases resolved; unknown and missing parameters are a
    ValueError naming them and what is allowed (``given``: parameters the caller supplies itself)."""
    params = dict(params)
    sig = inspect.signature(PARTITIONERS[name])
    data_arg = next(iter(sig.parameters))
    for alias, canon in _ALIASES.get(name, {}).items():
        if alias in params:
            if canon in params:
                raise ValueError(f"{name}: both {alias!r} and {canon!r} given; use {canon!r}")
            params[canon] = params.pop(alias)
    allowed = [p for p in sig.parameters if p not in (data_arg, "seed")]
    shown = ", ".join(p for p in allowed if p not in given)      # what the caller may set
    unknown = [p for p in params if p not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {unknown}; allowed: {shown}")
    required = [p for p in allowed if sig.parameters[p].default is inspect.Parameter.empty
                and p not in params and p not in given]
    if required:
        raise ValueError(f"{name}: missing parameter(s) {required}; allowed: {shown}")
    return params


def partition_spec(value, params=None, *, default=None, where: str = "partition") -> dict:
    """The one form of a problem's partition, ``{"method": NAME, **params}``, from any spelling a
    problem block accepts: ``{method: NAME, ...params}`` (every problem), a rule name ``NAME``
    (shorthand), or a rule name with ``partition_params: {...}`` (the softmax problem's older form).
    ``value`` None: ``default``. A ValueError names ``where`` and the fix."""
    if value is None:
        value = default
    if isinstance(value, str):
        out = {"method": value}
    elif isinstance(value, dict) and "method" in value:
        out = dict(value)
    else:
        raise ValueError(f"{where} must be {{method: <rule>, ...params}} (or a rule name), got {value!r}; "
                         f"rules: {', '.join(PARTITIONERS)}")
    if params:
        if not isinstance(params, dict):
            raise ValueError(f"{where}_params must be a mapping of the rule's parameters, got {params!r}")
        twice = sorted(set(params) & set(out))
        if twice or len(out) > 1:
            raise ValueError(f"{where}: parameters given both inside {where} and in {where}_params "
                             f"({twice or sorted(set(out) - {'method'})}); write them once, as "
                             f"{where}: {{method: {out['method']}, ...params}}")
        out.update(params)
    return out


def check_partition_spec(spec: dict, *, where: str = "partition", given: tuple = ("m",),
                         inputs: tuple = ("n_samples", "labels")) -> None:
    """Check a partition block (:func:`partition_spec` form) without data: a registered rule, what it
    partitions is among ``inputs`` (what the problem can pass), no parameter the problem sets itself
    (``given``: ``m`` is the problem's number of clients), no unknown or missing parameter."""
    name = spec.get("method")
    if name not in PARTITIONERS:
        raise ValueError(f"{where}.method={name!r} is not a partition rule; allowed: {', '.join(PARTITIONERS)}")
    data_arg = partition_input(name)
    if data_arg not in inputs:
        fitting = [n for n in PARTITIONERS if partition_input(n) in inputs]
        raise ValueError(f"{where}.method={name!r} partitions {data_arg}, which this problem does not have; "
                         f"allowed here: {', '.join(fitting)}")
    params = {k: v for k, v in spec.items() if k != "method"}
    clash = sorted(set(params) & set(given))
    if clash:
        raise ValueError(f"{where}: {clash} is set by the problem (its number of clients: problem.m, or Q for softmax); "
                         f"remove it from {where}")
    try:
        _checked_params(name, params, given)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


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
    data_arg = partition_input(name)
    params = _checked_params(name, params)
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
