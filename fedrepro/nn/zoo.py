"""Named models of the papers, each declared as a list of layer specs.

003 fedadmm_gong (spec §5, the authors' ``models.py``): CNN 1 / CNN 2 have **no
activation after the convolutions**, padding 2, flatten in C, H, W order, and a
Softmax layer before the cross-entropy (head ``softmax_ce``); PyTorch default init.
MLP-1 / MLP-2 are the reduced-scale "2NN" models with the same head and init.

002 aspire (spec §5): the deep MLP of Wang, Yan & Oates (2017), d -> 500 -> 500 -> 500
-> C with ReLU and inverted dropout 0.1 on the input, 0.2 after hidden layers 1 and 2,
0.3 after hidden layer 3; the quick MLP d -> 128 -> 128 -> C without dropout;
Glorot-uniform init with zero biases; standard cross-entropy. Multinomial logistic
regression 784 -> 3 for the Fashion-MNIST subset, zero init. Input dimensions and
class counts (spec §4): SHL d = 55, C = 8; Person Activity d = 16, C = 11;
SC-MA (chest accelerometer) d = 35, C = 7.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedrepro.nn.layers import conv2d, dense, dropout, flatten, maxpool2d, relu
from fedrepro.nn.model import Model


@dataclass(frozen=True)
class ModelSpec:
    """A named architecture: input shape, layer specs, init rule, default head."""

    input_shape: tuple
    layers: tuple
    init: str = "torch"
    head: str = "softmax_ce"
    description: str = ""
    n_params: int | None = field(default=None, compare=False)   # expected count (checked by the tests)

    def build(self, name: str = "model", *, head: str | None = None, init: str | None = None,
              dtype=np.float32) -> Model:
        return Model(self.layers, self.input_shape, init=init or self.init, head=head or self.head,
                     name=name, dtype=dtype)


def fedadmm_cnn(hidden: int, n_classes: int = 10) -> tuple:
    """conv5x5(32, pad 2) - pool2 - conv5x5(64, pad 2) - pool2 - flatten - dense(hidden) - ReLU - dense."""
    return (conv2d(32, 5, padding=2), maxpool2d(2),
            conv2d(64, 5, padding=2), maxpool2d(2),
            flatten(), dense(hidden), relu(), dense(n_classes))


def mlp(hidden: tuple, n_classes: int, dropouts: tuple | None = None) -> tuple:
    """flatten - [dropout] - (dense - ReLU - [dropout]) per hidden width - dense(n_classes).
    ``dropouts``: len(hidden) + 1 probabilities (input, after each hidden layer)."""
    if dropouts is not None and len(dropouts) != len(hidden) + 1:
        raise ValueError(f"need {len(hidden) + 1} dropout probabilities, got {len(dropouts)}")
    ps = dropouts or (0.0,) * (len(hidden) + 1)
    layers = [flatten()]
    if ps[0]:
        layers.append(dropout(ps[0]))
    for width, p in zip(hidden, ps[1:]):
        layers += [dense(width), relu()]
        if p:
            layers.append(dropout(p))
    layers.append(dense(n_classes))
    return tuple(layers)


_ASPIRE_SENSORS = {"shl": (55, 8), "person_activity": (16, 11), "scma": (35, 7)}

MODELS: dict[str, ModelSpec] = {
    "cnn1": ModelSpec((1, 28, 28), fedadmm_cnn(512), "torch", "softmax_ce",
                      "003 CNN 1 (MNIST/FMNIST)", 1_663_370),
    "cnn2": ModelSpec((3, 32, 32), fedadmm_cnn(256), "torch", "softmax_ce",
                      "003 CNN 2 (CIFAR-10)", 1_105_098),
    "mlp1": ModelSpec((784,), mlp((200, 200), 10), "torch", "softmax_ce",
                      "003 MLP-1, reduced scale (MNIST/FMNIST)", 199_210),
    "mlp2": ModelSpec((3072,), mlp((200, 200), 10), "torch", "softmax_ce",
                      "003 MLP-2, reduced scale (CIFAR-10)", 656_810),
    "aspire_logistic": ModelSpec((784,), mlp((), 3), "zeros", "logits_ce",
                                 "002 logistic regression, Fashion-MNIST 3 classes", 2_355),
}
for _key, (_d, _c) in _ASPIRE_SENSORS.items():
    MODELS[f"aspire_mlp_{_key}"] = ModelSpec(
        (_d,), mlp((500, 500, 500), _c, (0.1, 0.2, 0.2, 0.3)), "glorot", "logits_ce",
        f"002 deep MLP 3x500 with dropout ({_key}, d={_d}, C={_c})",
        (_d + 1) * 500 + 2 * 501 * 500 + 501 * _c)
    MODELS[f"aspire_quick_mlp_{_key}"] = ModelSpec(
        (_d,), mlp((128, 128), _c), "glorot", "logits_ce",
        f"002 quick MLP 2x128 ({_key}, d={_d}, C={_c})", (_d + 1) * 128 + 129 * 128 + 129 * _c)


def build_model(name: str | ModelSpec, *, head: str | None = None, init: str | None = None,
                dtype=np.float32) -> Model:
    """Build a named model (see :data:`MODELS`) or a :class:`ModelSpec`;
    ``head`` / ``init`` override the model's defaults."""
    if isinstance(name, ModelSpec):
        return name.build("custom", head=head, init=init, dtype=dtype)
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; available: {', '.join(sorted(MODELS))} "
                         "(or pass a fedrepro.nn.ModelSpec)")
    return MODELS[name].build(name, head=head, init=init, dtype=dtype)
