"""Initialisation rules for the weight and bias of a parametrised layer.

* ``torch``: PyTorch's default for Linear/Conv2d: weight ~ kaiming_uniform(a=sqrt(5)),
  i.e. U(-b, b) with b = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)), which is
  b = 1 / sqrt(fan_in); bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
* ``glorot``: weight ~ U(-b, b), b = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010;
  Keras' default), bias = 0.
* ``zeros``: everything 0.

fan_in = in_channels * kh * kw (conv) or in_features (dense); fan_out likewise with
out. Draws are made layer by layer, weight then bias, in float64 from the given
Generator and cast to the parameter dtype, so a seed gives the same values
(up to rounding) in float32 and float64.
"""
from __future__ import annotations

import math

import numpy as np

INIT_RULES = ("torch", "glorot", "zeros")


def check_rule(rule: str) -> str:
    if rule not in INIT_RULES:
        raise ValueError(f"unknown init rule {rule!r}; choose one of {', '.join(INIT_RULES)}")
    return rule


def initialise(rule: str, name: str, view: np.ndarray, fan_in: int, fan_out: int,
               rng: np.random.Generator) -> None:
    """Fill ``view`` (the ``name`` = 'weight' or 'bias' parameter of one layer) in place."""
    if rule == "zeros" or (rule == "glorot" and name == "bias"):
        view[...] = 0
        return
    if rule == "torch":
        bound = 1.0 / math.sqrt(fan_in)
    elif rule == "glorot":
        bound = math.sqrt(6.0 / (fan_in + fan_out))
    else:
        raise ValueError(f"unknown init rule {rule!r}; choose one of {', '.join(INIT_RULES)}")
    view[...] = rng.uniform(-bound, bound, size=view.shape)
