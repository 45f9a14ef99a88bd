"""Tests of the numpy neural-network engine fedrepro.nn."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fedrepro.nn import (MODELS, SGD, Model, ModelSpec, build_model, conv2d, dense, dropout, evaluate,
                         fedadmm_cnn, flatten, logits_ce, maxpool2d, mlp, relu, softmax_ce)
from fedrepro.nn.layers import Conv2d, Dropout, MaxPool2d
from tests.toys import NumpySGD

F64 = np.float64


def _fd_check_model(model, w, X, y, rng_seed=None, head=None, n_coords=None, eps=1e-6, rtol=1e-6):
    """Central differences of the batch loss vs loss_and_grad, in float64.
    Dropout (if any) uses a fresh Generator(rng_seed) per evaluation: identical masks."""
    mk = (lambda: np.random.default_rng(rng_seed)) if rng_seed is not None else (lambda: None)
    loss, g = model.loss_and_grad(w, X, y, rng=mk(), head=head)
    r = np.random.default_rng(123)
    coords = np.arange(model.n_params) if n_coords is None or n_coords >= model.n_params \
        else r.choice(model.n_params, n_coords, replace=False)
    fd = np.empty(len(coords))
    for k, i in enumerate(coords):
        wp, wm = w.copy(), w.copy()
        wp[i] += eps
        wm[i] -= eps
        fd[k] = (model.loss_and_grad(wp, X, y, rng=mk(), head=head)[0]
                 - model.loss_and_grad(wm, X, y, rng=mk(), head=head)[0]) / (2 * eps)
    scale = max(np.abs(fd).max(), 1e-8)
    np.testing.assert_allclose(g[coords], fd, rtol=0, atol=rtol * scale + 1e-9)
    # one random direction through all coordinates
    v = r.standard_normal(model.n_params)
    v /= np.linalg.norm(v)          # a step of length eps: no max-pool/ReLU switch for the big models
    dd = (model.loss_and_grad(w + eps * v, X, y, rng=mk(), head=head)[0]
          - model.loss_and_grad(w - eps * v, X, y, rng=mk(), head=head)[0]) / (2 * eps)
    assert g @ v == pytest.approx(dd, rel=1e-5, abs=1e-8)
    return loss, g


def _data(model, batch, seed=0):
    r = np.random.default_rng(seed)
    X = r.standard_normal((batch,) + model.input_shape)
    y = r.integers(0, model.n_classes, batch)
    return X, y


# ---- finite-difference checks through small models (every layer, both heads) ------------------
TINY = {
    "dense": ([dense(3)], (4,)),
    "dense_relu_dense": ([dense(6), relu(), dense(3)], (5,)),
    "dropout_mlp": ([dropout(0.3), dense(7), relu(), dropout(0.5), dense(7), relu(), dropout(0.2), dense(3)], (5,)),
    "conv_pad_stride": ([conv2d(3, 3, stride=2, padding=1), flatten(), dense(3)], (2, 7, 7)),
    "conv_no_pad": ([conv2d(2, 2), flatten(), dense(3)], (1, 5, 4)),
    "conv_stride3_crop": ([conv2d(2, 2, stride=3, padding=1), relu(), flatten(), dense(3)], (2, 8, 7)),
    "two_convs": ([conv2d(3, 3, padding=1), conv2d(2, 3, stride=2, padding=2), flatten(), dense(3)], (2, 6, 6)),
    "maxpool2": ([conv2d(3, 3, padding=1), maxpool2d(2), flatten(), dense(3)], (2, 6, 6)),
    "maxpool2_crop": ([conv2d(3, 3, padding=1), maxpool2d(2), flatten(), dense(3)], (2, 7, 5)),
    "maxpool3": ([conv2d(2, 3, padding=1), maxpool2d(3), flatten(), dense(3)], (1, 7, 8)),
    "pool_then_conv": ([conv2d(3, 3, padding=1), maxpool2d(2), conv2d(2, 3, padding=1), flatten(), dense(3)],
                       (1, 6, 6)),
    "flatten_first": ([flatten(), dense(4), relu(), dense(3)], (2, 3, 3)),
    "no_bias": ([conv2d(2, 3, padding=1, bias=False), flatten(), dense(3, bias=False)], (1, 4, 4)),
    # >= 8 input channels take the channel-last im2col path, fewer the channel-first one
    "wide_convs": ([conv2d(8, 3, padding=1), conv2d(3, 3, stride=2, padding=1), maxpool2d(2), flatten(), dense(3)],
                   (9, 6, 6)),
}


@pytest.mark.parametrize("head", ["softmax_ce", "logits_ce"])
@pytest.mark.parametrize("name", sorted(TINY))
def test_gradients_match_finite_differences(name, head):
    layers, shape = TINY[name]
    model = Model(layers, shape, head=head, name=name, dtype=F64)
    w = model.init(np.random.default_rng(1))
    w += 0.3 * np.random.default_rng(2).standard_normal(w.shape)    # away from the init scale
    X, y = _data(model, 4)
    seed = 5 if any(isinstance(l, Dropout) for l in layers) else None
    _fd_check_model(model, w, X, y, rng_seed=seed, n_coords=60)


@pytest.mark.parametrize("head", ["softmax_ce", "logits_ce"])
def test_family_gradients_tiny_fedadmm_cnn(head):
    """The CNN 1/2 family (conv-pool-conv-pool-flatten-dense-relu-dense) at a tiny size."""
    spec = ModelSpec((2, 8, 8), (conv2d(3, 5, padding=2), maxpool2d(2), conv2d(4, 5, padding=2), maxpool2d(2),
                                  flatten(), dense(6), relu(), dense(5)))
    model = build_model(spec, head=head, dtype=F64)
    w = model.init(np.random.default_rng(3))
    X, y = _data(model, 3, seed=4)
    _fd_check_model(model, w, X, y, n_coords=80)


@pytest.mark.parametrize("head", ["softmax_ce", "logits_ce"])
def test_family_gradients_tiny_dropout_mlp(head):
    """The aspire deep-MLP family (input dropout, dropout after each hidden layer), under a fixed rng."""
    spec = ModelSpec((6,), mlp((8, 8, 8), 4, (0.1, 0.2, 0.2, 0.3)), init="glorot")
    model = build_model(spec, head=head, dtype=F64)
    w = model.init(np.random.default_rng(6))
    w += 0.1 * np.random.default_rng(7).standard_normal(w.shape)
    X, y = _data(model, 5, seed=8)
    _fd_check_model(model, w, X, y, rng_seed=9, n_coords=80)
    # dropout really acts in training mode and not in eval mode
    l_train = model.loss_and_grad(w, X, y, rng=np.random.default_rng(9))[0]
    l_eval = model.loss_and_grad(w, X, y)[0]
    assert l_train != l_eval
    assert l_eval == pytest.approx(model.loss(w, X, y), rel=1e-12)


LAYER_CASES = [
    (conv2d(3, 3, stride=1, padding=1), (2, 5, 6)),
    (conv2d(3, 3, stride=1, padding=1), (8, 4, 5)),
    (conv2d(2, 2, stride=2, padding=0), (9, 5, 6)),
    (conv2d(2, 3, stride=3, padding=2), (10, 6, 5)),
    (conv2d(2, 2, stride=2, padding=0), (3, 6, 5)),
    (conv2d(2, 3, stride=2, padding=2), (1, 5, 5)),
    (maxpool2d(2), (3, 4, 6)),
    (maxpool2d(2), (2, 5, 7)),
    (maxpool2d(3), (2, 7, 6)),
    (relu(), (3, 4, 4)),
    (flatten(), (3, 2, 4)),
    (dense(4), (5,)),
]


@pytest.mark.parametrize("layer,shape", LAYER_CASES, ids=lambda v: repr(v))
def test_layer_input_and_param_gradients(layer, shape):
    """Each layer alone: d/dx and d/dparams of sum(R * layer(x)) against central differences
    (internal layout: images channel-last (B, H, W, C), feature vectors feature-major (F, B))."""
    r = np.random.default_rng(10)
    pshapes, out_shape = layer.setup(shape)
    params = tuple(r.standard_normal(s) for _, s in pshapes)
    xshape = (2,) + (shape[1], shape[2], shape[0]) if len(shape) == 3 else shape + (2,)
    x = r.standard_normal(xshape)
    y, cache = layer.forward(params, x, None)
    R = r.standard_normal(y.shape)
    grads = tuple(np.empty_like(p) for p in params)
    dx = layer.backward(params, cache, R, grads, True)

    def f(xx, pp):
        return float((layer.forward(pp, xx, None)[0] * R).sum())

    eps = 1e-6
    for arr, g in [(x, dx)] + list(zip(params, grads)):
        fd = np.empty(arr.size)
        for i in range(arr.size):
            old = arr.flat[i]
            arr.flat[i] = old + eps
            fp = f(x, params)
            arr.flat[i] = old - eps
            fm = f(x, params)
            arr.flat[i] = old
            fd[i] = (fp - fm) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g).ravel(), fd, rtol=1e-6, atol=1e-6)


def test_dropout_layer_masks_scaling_and_eval_mode():
    layer = Dropout(0.25)
    x = np.ones((400, 50))
    y, keep = layer.forward((), x, np.random.default_rng(0))
    kept = y != 0
    assert set(np.unique(y)) == {0.0, 1 / 0.75}
    assert abs(kept.mean() - 0.75) < 0.01
    g = np.random.default_rng(1).standard_normal(x.shape)
    np.testing.assert_allclose(layer.backward((), keep, g, (), True), g * kept / 0.75, rtol=1e-15)
    y_eval, keep_eval = layer.forward((), x, None)
    assert y_eval is x and keep_eval is None
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.0)


# ---- hand-computed examples ---------------------------------------------------------------------
def test_double_softmax_head_hand_computed():
    # row 1: z = (0, 0), y = 0: p = q = (1/2, 1/2); loss = -1/2 + log(2 e^{1/2}) = log 2;
    #        g_p = (-1/2, 1/2), <g_p, p> = 0, g_z = p * g_p = (-1/4, 1/4)
    # row 2: z = (log 3, 0), y = 1: p = (3/4, 1/4); loss = -1/4 + log(e^{3/4} + e^{1/4}) = log(1 + e^{1/2});
    #        q = (s, 1 - s), s = sigmoid(1/2); g_p = (s, -s); <g_p, p> = s/2; g_z = (3s/8, -3s/8)
    s = 1 / (1 + math.exp(-0.5))
    z = np.array([[0.0, 0.0], [math.log(3), 0.0]])
    y = np.array([0, 1])
    losses, gz = softmax_ce(z, y)
    np.testing.assert_allclose(losses, [math.log(2), math.log(1 + math.exp(0.5))], rtol=1e-14)
    np.testing.assert_allclose(gz, np.array([[-0.25, 0.25], [3 * s / 8, -3 * s / 8]]) / 2, rtol=1e-13)
    # standard CE on the same logits: loss_1 = log 2, loss_2 = log 4; g = (softmax - onehot) / B
    losses, gz = logits_ce(z, y)
    np.testing.assert_allclose(losses, [math.log(2), math.log(4)], rtol=1e-14)
    np.testing.assert_allclose(gz, np.array([[-0.5, 0.5], [0.75, -0.75]]) / 2, rtol=1e-13)


def test_double_softmax_loss_bounds_and_small_gradients():
    """Spec 003 §5: with 10 classes the loss lies in [log(1 + 9/e), log(9 + e)]."""
    z = np.zeros((3, 10))
    z[0, 4] = 60.0    # confident and right
    z[1, 7] = 60.0    # confident and wrong
    y = np.array([4, 4, 4])
    losses, gz = softmax_ce(z, y)
    np.testing.assert_allclose(losses[:2], [math.log(1 + 9 / math.e), math.log(9 + math.e)], rtol=1e-12)
    # uniform p: q uniform too, loss = -1/10 + log(10 e^{1/10}) = log 10, and g_z = (q - onehot)/10 / B
    assert losses[2] == pytest.approx(math.log(10), rel=1e-14)
    expected = (np.full(10, 0.1) - np.eye(10)[4]) / 10 / 3
    np.testing.assert_allclose(gz[2], expected, rtol=1e-12)


def test_conv_layer_hand_computed():
    # x = [[1,2,3],[4,5,6],[7,8,9]], W = [[1,2],[3,4]], b = 0.5, no padding:
    # y = [[1+4+12+20, 2+6+15+24], [4+10+21+32, 5+12+24+36]] + 0.5
    layer = Conv2d(1, 2)
    x = np.arange(1.0, 10.0).reshape(1, 3, 3, 1)
    W = np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 1, 2, 2)
    b = np.array([0.5])
    y, cache = layer.forward((W, b), x, None)
    np.testing.assert_array_equal(y[0, :, :, 0], [[37.5, 47.5], [67.5, 77.5]])
    # L = sum(y): dW[a,b] = sum of the 4 inputs under offset (a,b); db = 4;
    # dx[i,j] = sum of the weights covering (i,j)
    gW, gb = np.empty_like(W), np.empty_like(b)
    dx = layer.backward((W, b), cache, np.ones_like(y), (gW, gb), True)
    np.testing.assert_array_equal(gW[0, 0], [[12, 16], [24, 28]])
    np.testing.assert_array_equal(gb, [4])
    np.testing.assert_array_equal(dx[0, :, :, 0], [[1, 3, 2], [4, 10, 6], [3, 7, 4]])
    # padding 1: the corner output sees only x[0,0] under W[1,1]; the centre sees W against x[0:2,0:2]
    y, _ = Conv2d(1, 2, padding=1).forward((W, b), x, None)
    assert y.shape == (1, 4, 4, 1)
    assert y[0, 0, 0, 0] == 4 * 1 + 0.5
    assert y[0, 3, 3, 0] == 1 * 9 + 0.5
    assert y[0, 1, 1, 0] == 37.5
    # stride 2 with padding 1 keeps outputs (0,0), (0,2), (2,0), (2,2) of the padding-1 map
    y2, _ = Conv2d(1, 2, stride=2, padding=1).forward((W, b), x, None)
    np.testing.assert_array_equal(y2[0, :, :, 0], y[0, ::2, ::2, 0])


def test_maxpool_hand_computed_with_first_max_ties():
    layer = MaxPool2d(2)
    x = np.array([[1.0, 5.0, 2.0, 2.0],
                  [3.0, 2.0, 2.0, 2.0],
                  [0.0, 0.0, -1.0, -3.0],
                  [7.0, 7.0, -2.0, -1.0]]).reshape(1, 4, 4, 1)
    y, cache = layer.forward((), x, None)
    np.testing.assert_array_equal(y[0, :, :, 0], [[5, 2], [7, -1]])
    dx = layer.backward((), cache, np.array([10.0, 20.0, 30.0, 40.0]).reshape(1, 2, 2, 1), (), True)
    # ties go to the first element in row-major order (PyTorch): 2 -> (0,2), 7 -> (3,0), -1 -> (2,2)
    np.testing.assert_array_equal(dx[0, :, :, 0], [[0, 10, 20, 0], [0, 0, 0, 0], [0, 0, 40, 0], [30, 0, 0, 0]])


def _naive_fedadmm_cnn_logits(model, w, X):
    """Independent NCHW forward: direct convolution by loops over kernel offsets, max-pool by
    reshape, flatten in C, H, W order, dense layers in PyTorch's (out, in) layout."""
    (W1, b1), _, (W2, b2), _, _, (W3, b3), _, (W4, b4) = model.unflatten(w)

    def conv(x, W, b, pad):
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        k = W.shape[2]
        ho, wo = xp.shape[2] - k + 1, xp.shape[3] - k + 1
        out = np.zeros((x.shape[0], W.shape[0], ho, wo))
        for a in range(k):
            for c in range(k):
                out += np.einsum("bihw,oi->bohw", xp[:, :, a:a + ho, c:c + wo], W[:, :, a, c])
        return out + b[None, :, None, None]

    def pool(x):
        b, c, h, w_ = x.shape
        return x.reshape(b, c, h // 2, 2, w_ // 2, 2).max(axis=(3, 5))

    h = pool(conv(X, W1, b1, 2))           # no activation after the convolutions (spec 003 §5)
    h = pool(conv(h, W2, b2, 2))
    h = h.reshape(h.shape[0], -1)
    h = np.maximum(h @ W3.T + b3, 0)
    return h @ W4.T + b4


@pytest.mark.parametrize("name", ["cnn1", "cnn2"])
def test_fedadmm_cnn_forward_matches_independent_reference(name):
    model = build_model(name, dtype=F64)
    w = model.init(np.random.default_rng(11))
    X, y = _data(model, 2, seed=12)
    z = model.predict(w, X)
    np.testing.assert_allclose(z, _naive_fedadmm_cnn_logits(model, w, X), rtol=1e-10, atol=1e-12)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    expected = np.mean(-p[np.arange(2), y] + np.log(np.exp(p).sum(1)))
    assert model.loss(w, X, y) == pytest.approx(expected, rel=1e-12)
    assert model.head == "softmax_ce"


def test_fedadmm_architectures_as_specified():
    for name, (c, size, hidden) in {"cnn1": (1, 28, 512), "cnn2": (3, 32, 256)}.items():
        model = build_model(name)
        assert model.input_shape == (c, size, size)
        assert [type(l).__name__ for l in model.layers] == [
            "Conv2d", "MaxPool2d", "Conv2d", "MaxPool2d", "Flatten", "Dense", "ReLU", "Dense"]
        assert (model.layers[0].out_channels, model.layers[0].kernel_size, model.layers[0].padding) == (32, 5, 2)
        assert (model.layers[2].out_channels, model.layers[2].kernel_size, model.layers[2].padding) == (64, 5, 2)
        assert model.layers[5].out_features == hidden
        assert model.shapes[5] == (64 * (size // 4) ** 2,)
        assert model.init_rule == "torch" and model.head == "softmax_ce"
    aspire = build_model("aspire_mlp_shl")
    assert [getattr(l, "p", None) for l in aspire.layers if isinstance(l, Dropout)] == [0.1, 0.2, 0.2, 0.3]
    assert aspire.init_rule == "glorot" and aspire.head == "logits_ce"
    assert not any(isinstance(l, Dropout) for l in build_model("aspire_quick_mlp_shl").layers)
    assert build_model("aspire_logistic").init_rule == "zeros"


# ---- parameter counts and layout -----------------------------------------------------------------
PARAM_COUNTS = {
    "cnn1": 1_663_370, "cnn2": 1_105_098, "mlp1": 199_210, "mlp2": 656_810,
    "aspire_mlp_shl": 533_008, "aspire_mlp_person_activity": 515_011, "aspire_mlp_scma": 522_507,
    "aspire_quick_mlp_shl": 24_712, "aspire_quick_mlp_person_activity": 20_107, "aspire_quick_mlp_scma": 22_023,
    "aspire_logistic": 2_355,
}


@pytest.mark.parametrize("name", sorted(PARAM_COUNTS))
def test_exact_parameter_counts(name):
    model = build_model(name)
    assert model.n_params == PARAM_COUNTS[name]
    assert model.init(np.random.default_rng(0)).shape == (PARAM_COUNTS[name],)


def test_every_named_model_has_a_count_test():
    assert set(MODELS) == set(PARAM_COUNTS)
    assert all(MODELS[n].n_params == PARAM_COUNTS[n] for n in MODELS)


def test_flat_layout_is_pytorch_state_dict_order():
    model = build_model("cnn1")
    slots = [(s.name, s.shape, s.start) for s in model.slots]
    assert slots == [("weight", (32, 1, 5, 5), 0), ("bias", (32,), 800),
                     ("weight", (64, 32, 5, 5), 832), ("bias", (64,), 832 + 51_200),
                     ("weight", (512, 3136), 52_096), ("bias", (512,), 52_096 + 1_605_632),
                     ("weight", (10, 512), 1_658_240), ("bias", (10,), 1_663_360)]
    w = np.arange(model.n_params, dtype=np.float32)
    views = model.unflatten(w)
    assert np.shares_memory(views[0][0], w)
    assert views[5][0][1, 0] == 52_096 + 3136   # dense weight row-major (out, in)


# ---- init rules ------------------------------------------------------------------------------------
def test_init_rules_bounds_and_reproducibility():
    model = build_model("cnn1")
    w1 = model.init(np.random.default_rng(42))
    w2 = model.init(np.random.default_rng(42))
    np.testing.assert_array_equal(w1, w2)
    assert not np.array_equal(w1, model.init(np.random.default_rng(43)))
    # torch rule: U(+-1/sqrt(fan_in)) for weight and bias; fan_in 25, 800, 3136, 512
    for (W, b), fan_in in zip([v for v in model.unflatten(w1) if v], [25, 800, 3136, 512]):
        bound = 1 / math.sqrt(fan_in)
        assert np.abs(W).max() <= bound and np.abs(W).max() > 0.99 * bound
        assert np.abs(b).max() <= bound and np.abs(b).min() > 0
        assert abs(W.std() - bound / math.sqrt(3)) < 0.05 * bound
    # glorot: U(+-sqrt(6/(fan_in+fan_out))), zero bias
    g = build_model("aspire_mlp_shl")
    views = [v for v in g.unflatten(g.init(np.random.default_rng(0))) if v]
    for (W, b), (fi, fo) in zip(views, [(55, 500), (500, 500), (500, 500), (500, 8)]):
        bound = math.sqrt(6 / (fi + fo))
        assert np.abs(W).max() <= bound and np.abs(W).max() > 0.9 * bound
        assert not b.any()
    assert not build_model("aspire_logistic").init(np.random.default_rng(0)).any()
    with pytest.raises(TypeError, match="numpy Generator"):
        model.init(42)


def test_dropout_masks_reproducible_from_the_seed():
    model = build_model("aspire_mlp_shl")
    w = model.init(np.random.default_rng(0))
    X, y = _data(model, 16, seed=1)
    X = X.astype(np.float32)
    l1, g1 = model.loss_and_grad(w, X, y, rng=np.random.default_rng(5))
    l2, g2 = model.loss_and_grad(w, X, y, rng=np.random.default_rng(5))
    l3, g3 = model.loss_and_grad(w, X, y, rng=np.random.default_rng(6))
    assert l1 == l2 and np.array_equal(g1, g2)
    assert l1 != l3 and not np.array_equal(g1, g3)
    # same masks in float64 (uniforms are drawn in float32 whatever the dtype)
    m64 = build_model("aspire_mlp_shl", dtype=F64)
    l4, g4 = m64.loss_and_grad(w.astype(F64), X, y, rng=np.random.default_rng(5))
    assert l4 == pytest.approx(l1, rel=1e-5)
    np.testing.assert_allclose(g4, g1, rtol=1e-3, atol=1e-6)


# ---- dtypes, batches, API ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cnn1", "mlp1", "aspire_mlp_scma"])
def test_float32_end_to_end(name):
    model = build_model(name)
    w = model.init(np.random.default_rng(0))
    assert w.dtype == np.float32
    X, y = _data(model, 3)                      # float64 input is cast to float32
    loss, g = model.loss_and_grad(w, X, y, rng=np.random.default_rng(1))
    assert g.dtype == np.float32 and isinstance(loss, float) and np.isfinite(loss)
    assert model.predict(w, X).dtype == np.float32
    # every activation and every backward signal stays float32
    x = model._prepare(X, np.float32)
    caches = []
    for layer, params in zip(model.layers, model.unflatten(w)):
        x, c = layer.forward(params, x, np.random.default_rng(2))
        assert x.dtype == np.float32, layer
        caches.append(c)
    gx = softmax_ce(x.T, y)[1].T                # the layers work on (K, B)
    assert gx.dtype == np.float32
    grads = model.unflatten(np.empty_like(w))
    for i in range(len(model.layers) - 1, 0, -1):
        gx = model.layers[i].backward(model.unflatten(w)[i], caches[i], gx, grads[i], True)
        assert gx.dtype == np.float32, model.layers[i]
    opt = SGD(lr=0.1, momentum=0.9, weight_decay=1e-4)
    opt.step(w, g)
    opt.step(w, g)
    assert w.dtype == np.float32 and opt.buf.dtype == np.float32


def test_float32_gradient_close_to_float64():
    model = build_model("cnn1")
    w32 = model.init(np.random.default_rng(0))
    X, y = _data(model, 4)
    l32, g32 = model.loss_and_grad(w32, X.astype(np.float32), y)
    l64, g64 = model.loss_and_grad(w32.astype(F64), X, y)
    assert l32 == pytest.approx(l64, rel=1e-5)
    assert np.linalg.norm(g32 - g64) <= 1e-4 * np.linalg.norm(g64)


@pytest.mark.parametrize("name", ["tiny_cnn", "mlp1"])
def test_batch_gradient_is_mean_of_per_example_gradients(name):
    if name == "tiny_cnn":
        model = Model(fedadmm_cnn(6, 4), (2, 8, 8), dtype=F64)
    else:
        model = build_model(name, dtype=F64)
    w = model.init(np.random.default_rng(0))
    X, y = _data(model, 5)
    loss, g = model.loss_and_grad(w, X, y)
    per = [model.loss_and_grad(w, X[i:i + 1], y[i:i + 1]) for i in range(5)]
    assert loss == pytest.approx(np.mean([p[0] for p in per]), rel=1e-12)
    np.testing.assert_allclose(g, np.mean([p[1] for p in per], axis=0), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("name,seed", [("cnn1", None), ("cnn2", None), ("mlp2", None), ("aspire_mlp_person_activity", 3)])
def test_full_size_model_gradients_match_finite_differences(name, seed):
    """The real models (float64, small batch): 40 random coordinates and one random direction."""
    model = build_model(name, dtype=F64)
    w = model.init(np.random.default_rng(0))
    X, y = _data(model, 2, seed=1)
    _fd_check_model(model, w, X, y, rng_seed=seed, n_coords=40, rtol=1e-5)


def test_workspace_reuse_leaves_no_stale_state():
    """Scratch buffers are reused between calls: results must not depend on earlier calls,
    and arrays returned to the caller must not be overwritten by later calls."""
    model = build_model("cnn1")
    fresh = build_model("cnn1")
    w = model.init(np.random.default_rng(0))
    XA, yA = _data(model, 5, seed=1)
    XB, yB = _data(model, 3, seed=2)
    la, ga = model.loss_and_grad(w, XA, yA)
    za = model.predict(w, XA)
    za_copy, ga_copy = za.copy(), ga.copy()
    lb, gb = model.loss_and_grad(w, XB, yB)           # other batch size: buffers replaced
    model.predict(w, XB)
    la2, ga2 = model.loss_and_grad(w, XA, yA)
    np.testing.assert_array_equal(za, za_copy)
    np.testing.assert_array_equal(ga, ga_copy)
    assert la2 == la and np.array_equal(ga2, ga)
    lb_fresh, gb_fresh = fresh.loss_and_grad(w, XB, yB)
    assert lb == lb_fresh and np.array_equal(gb, gb_fresh)
    assert sum(ws.nbytes for ws in model._ws) > 0
    model.clear_workspace()
    assert sum(ws.nbytes for ws in model._ws) == 0
    assert model.loss_and_grad(w, XA, yA)[0] == la


def test_head_override_and_predict():
    model = build_model("mlp1", dtype=F64)
    w = model.init(np.random.default_rng(0))
    X, y = _data(model, 6)
    z = model.predict(w, X)
    assert z.shape == (6, 10)
    l_ce, g_ce = model.loss_and_grad(w, X, y, head="logits_ce")
    assert l_ce == pytest.approx(logits_ce(z, y)[0].mean(), rel=1e-12)
    l_ds, g_ds = model.loss_and_grad(w, X, y)
    assert l_ds == pytest.approx(softmax_ce(z, y)[0].mean(), rel=1e-12)
    # near initialisation the double-softmax gradient is about 10x smaller (spec 003 §5)
    ratio = np.linalg.norm(g_ce) / np.linalg.norm(g_ds)
    assert 5 < ratio < 20
    # the image shape and the flat shape are the same input
    Ximg = X.reshape(6, 1, 28, 28)
    np.testing.assert_array_equal(model.predict(w, Ximg), z)
    out = np.empty_like(w)
    assert model.loss_and_grad(w, X, y, out=out)[1] is out


def test_bad_input_errors():
    model = build_model("cnn1")
    w = model.init(np.random.default_rng(0))
    X = np.zeros((2, 1, 28, 28), np.float32)
    with pytest.raises(ValueError, match="unknown model"):
        build_model("cnn3")
    with pytest.raises(ValueError, match="unknown head"):
        model.loss_and_grad(w, X, np.array([0, 1]), head="mse")
    with pytest.raises(ValueError, match="X must have shape"):
        model.predict(w, np.zeros((2, 3, 28, 28), np.float32))
    with pytest.raises(ValueError, match="parameter vector"):
        model.predict(w[:-1], X)
    with pytest.raises(ValueError, match="labels must be in"):
        model.loss_and_grad(w, X, np.array([0, 10]))
    with pytest.raises(ValueError, match="integer labels"):
        model.loss_and_grad(w, X, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="flatten"):
        Model([dense(3)], (1, 4, 4))
    with pytest.raises(ValueError, match="class scores"):
        Model([conv2d(2, 3)], (1, 4, 4))
    with pytest.raises(ValueError, match="init rule"):
        build_model("mlp1", init="he")
    with pytest.raises(ValueError, match="does not fit"):
        Model([conv2d(2, 5), flatten(), dense(2)], (1, 3, 3))


# ---- optimiser and evaluation ------------------------------------------------------------------------
def test_sgd_momentum_pytorch_semantics_hand_computed():
    w = np.array([1.0, -2.0])
    g1, g2, g3 = np.array([0.5, 1.0]), np.array([-1.0, 2.0]), np.array([0.0, 1.0])
    opt = SGD(lr=0.1, momentum=0.5)
    opt.step(w, g1)                        # buf = g1
    np.testing.assert_allclose(w, [1 - 0.05, -2 - 0.1])
    opt.step(w, g2)                        # buf = 0.5 g1 + g2 = (-0.75, 2.5)
    np.testing.assert_allclose(w, [0.95 + 0.075, -2.1 - 0.25])
    opt.step(w, g3)                        # buf = (-0.375, 2.25)
    np.testing.assert_allclose(w, [1.025 + 0.0375, -2.35 - 0.225])
    opt.reset()
    assert opt.buf is None
    # weight decay enters the buffer: d = g + wd * w
    w = np.array([2.0])
    opt = SGD(lr=0.5, momentum=0.9, weight_decay=0.1)
    opt.step(w, np.array([1.0]))          # d = 1.2, buf = 1.2, w = 2 - 0.6
    opt.step(w, np.array([0.0]))          # d = 0.14, buf = 1.08 + 0.14 = 1.22, w = 1.4 - 0.61
    np.testing.assert_allclose(w, [0.79])
    # plain SGD and nesterov
    w = np.array([1.0])
    SGD(lr=0.25).step(w, np.array([2.0]))
    assert w[0] == 0.5
    w = np.array([0.0])
    opt = SGD(lr=1.0, momentum=0.5, nesterov=True)
    opt.step(w, np.array([1.0]))          # buf = 1, d = 1 + 0.5 = 1.5
    opt.step(w, np.array([1.0]))          # buf = 1.5, d = 1 + 0.75 = 1.75
    assert w[0] == pytest.approx(-3.25)
    with pytest.raises(ValueError, match="lr"):
        SGD(lr=-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fused", [True, False])
def test_sgd_step_is_the_numpy_passes_bit_for_bit(dtype, fused):
    """Every option of the one-pass step against the numpy passes it replaced, 6 steps on 1,000
    parameters (the kernel's vector body and its scalar remainder), np.array_equal: each element
    is rounded exactly as before (LLVM contracts nothing to FMA without fastmath; the fused update
    rounds once, as OpenBLAS's axpy does on FMA hardware)."""
    r = np.random.default_rng(7)
    w0 = r.standard_normal(1000).astype(dtype)
    grads = [r.standard_normal(1000).astype(dtype) for _ in range(6)]
    for kw in [dict(), dict(momentum=0.5), dict(momentum=0.9, weight_decay=0.01), dict(momentum=0.9, dampening=0.1),
               dict(momentum=0.9, nesterov=True), dict(weight_decay=1e-3), dict(lr=0.0, momentum=0.5)]:
        kw = {"lr": 0.0371, **kw}
        ours, ref = w0.copy(), w0.copy()
        opt, old = SGD(fused=fused, **kw), NumpySGD(fused=fused, **kw)
        for g in grads:
            opt.step(ours, g)
            old.step(ref, g.copy())
            assert np.array_equal(ours, ref), kw
            assert (opt.buf is None) == (old.buf is None) and (opt.buf is None or np.array_equal(opt.buf, old.buf))
        assert not np.array_equal(ours, w0) or kw["lr"] == 0


@pytest.mark.parametrize("dtype, tiny", [(np.float32, 2.0 ** -12), (np.float64, 2.0 ** -27)])
def test_sgd_update_rounds_once_unless_unfused(dtype, tiny):
    # lr = d = 1 + t, w = 1 + 2t: lr d = 1 + 2t + t^2 is a tie between 1 + 2t and its upper neighbour
    # and rounds (to even) to 1 + 2t, so w - lr d is 0 with the product rounded and -t^2 exactly
    lr = 1 + tiny
    w = np.full(3, 1 + 2 * tiny, dtype=dtype)
    d = np.full(3, 1 + tiny, dtype=dtype)
    assert (SGD(lr).step(w.copy(), d) == -dtype(tiny) ** 2).all()
    assert (SGD(lr, fused=False).step(w.copy(), d) == 0).all()


def test_sgd_adds_the_local_terms_in_its_pass():
    """rho (w - anchor) + shift enter d before momentum, in the order of the numpy passes they
    replaced (g += (w - anchor) * rho; g += shift); rho = 0 adds nothing (not even +0.0 to -0.0);
    mismatched vectors are refused."""
    r = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        w0, anchor, shift = (r.standard_normal(300).astype(dtype) for _ in range(3))
        grads = [r.standard_normal(300).astype(dtype) for _ in range(4)]
        grads[0][:5] = -0.0
        for rho, sh in ((0.3, shift), (0.3, None), (0.0, shift), (0.0, None)):
            ours, ref = w0.copy(), w0.copy()
            opt, old = SGD(0.1, momentum=0.5), NumpySGD(0.1, momentum=0.5)
            for g in grads:
                opt.step(ours, g, rho=rho, anchor=anchor, shift=sh)
                g = g.copy()
                if rho:
                    tmp = ref - anchor
                    tmp *= dtype(rho)
                    g += tmp
                if sh is not None:
                    g += sh
                old.step(ref, g)
                assert np.array_equal(ours, ref), (rho, sh is None)
                assert np.array_equal(np.signbit(opt.buf), np.signbit(old.buf))
    w = np.zeros(4, dtype=np.float32)
    with pytest.raises(ValueError, match="anchor"):
        SGD(0.1).step(w, w.copy(), rho=0.1)
    with pytest.raises(TypeError, match="shift"):
        SGD(0.1).step(w, w.copy(), shift=np.zeros(4))
    with pytest.raises(TypeError, match="float32 or float64 vector"):
        SGD(0.1).step(np.zeros((2, 2)), np.zeros((2, 2)))


def test_sgd_updates_in_place_whatever_the_memory(tmp_path):
    """The compiled step on contiguous vectors and on strided views gives the same update, and
    writes into the caller's memory (a memmap row too)."""
    r = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        w0 = r.standard_normal(1000).astype(dtype)
        g = r.standard_normal(1000).astype(dtype)
        w = w0.copy()
        assert SGD(lr=0.1).step(w, g) is w
        strided = np.repeat(w0, 2)[::2]                      # not contiguous: numpy path
        SGD(lr=0.1).step(strided, g)
        np.testing.assert_allclose(w, strided, rtol=0, atol=4 * np.finfo(dtype).eps)
        np.testing.assert_allclose(w, w0 - dtype(0.1) * g, rtol=0, atol=4 * np.finfo(dtype).eps)
        store = np.memmap(tmp_path / f"w{np.dtype(dtype).itemsize}", dtype=dtype, mode="w+", shape=(3, 1000))
        store[1] = w0
        SGD(lr=0.1).step(store[1], g)
        np.testing.assert_array_equal(np.asarray(store[1]), w)
        assert not store[0].any() and not store[2].any()


@pytest.mark.parametrize("bsz", [1, 5, 7])
def test_conv_chunked_im2col_equals_one_chunk(monkeypatch, bsz):
    """The general convolution path works a few images at a time (im2col rebuilt in backward);
    any chunk size, with a partial last chunk, gives the same outputs and gradients as one
    chunk of the whole batch (float64: exact up to summation order)."""
    import fedrepro.nn.layers as layers

    model = Model([conv2d(8, 3, padding=1), conv2d(4, 3, stride=2, padding=1), flatten(), dense(2)],
                  (2, 6, 6), dtype=F64)                  # 8 input channels: the general path
    w = model.init(np.random.default_rng(0))
    X, y = _data(model, bsz, seed=4)
    monkeypatch.setattr(layers, "_IM2COL_CHUNK", 1 << 30)
    model.clear_workspace()
    l1, g1 = model.loss_and_grad(w, X, y)
    z1 = model.predict(w, X)
    per_image = 9 * 3 * 3 * 8                              # second conv: 3x3 outputs, 3x3 kernel, 8 channels
    for chunk in (1, 2, 3):
        monkeypatch.setattr(layers, "_IM2COL_CHUNK", chunk * per_image)
        model.clear_workspace()
        l2, g2 = model.loss_and_grad(w, X, y)
        assert l2 == pytest.approx(l1, rel=1e-13)
        np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(model.predict(w, X), z1, rtol=1e-13)
    _fd_check_model(model, w, X, y)


def test_sgd_trains_a_tiny_cnn_and_evaluate_reports_it():
    """A few hundred SGD steps on a separable toy image task drive accuracy up."""
    r = np.random.default_rng(0)
    n = 240
    y = r.integers(0, 3, n)
    X = 0.3 * r.standard_normal((n, 1, 8, 8)).astype(np.float32)
    X[y == 0, 0, :4, :4] += 1.0            # class = which quadrant is bright
    X[y == 1, 0, 4:, 4:] += 1.0
    X[y == 2, 0, :4, 4:] += 1.0
    model = Model(fedadmm_cnn(16, 3), (1, 8, 8), head="logits_ce")
    w = model.init(np.random.default_rng(1))
    before = evaluate(model, w, X, y, batch=64)
    opt = SGD(lr=0.05, momentum=0.9)
    for step in range(150):
        idx = r.choice(n, 20, replace=False)
        _, g = model.loss_and_grad(w, X[idx], y[idx])
        opt.step(w, g)
    after = evaluate(model, w, X, y, batch=64)
    assert after["accuracy"] > 0.95 and after["loss"] < before["loss"] / 3
    # batching does not change the numbers
    whole = evaluate(model, w, X, y, batch=1000)
    assert whole["accuracy"] == after["accuracy"]
    assert whole["loss"] == pytest.approx(after["loss"], rel=1e-5)
    assert whole["loss"] == pytest.approx(model.loss(w, X, y), rel=1e-5)


# ---- PyTorch cross-check (torch is not a dependency; skipped without it) ---------------------------
def _torch_cnn1(torch, softmax: bool):
    nn = torch.nn
    layers = [nn.Conv2d(1, 32, 5, padding=2), nn.MaxPool2d(2), nn.Conv2d(32, 64, 5, padding=2), nn.MaxPool2d(2),
              nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10)]
    return nn.Sequential(*(layers + ([nn.Softmax(dim=1)] if softmax else [])))


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-9), (np.float32, 2e-4)])
@pytest.mark.parametrize("head", ["softmax_ce", "logits_ce"])
def test_cnn1_matches_pytorch(head, dtype, tol):
    torch = pytest.importorskip("torch", reason="PyTorch is not a dependency; cross-check runs only where it is installed")
    torch.set_num_threads(1)
    model = build_model("cnn1", dtype=dtype)
    w = model.init(np.random.default_rng(0))
    X, y = _data(model, 8, seed=1)
    X = X.astype(dtype)
    net = _torch_cnn1(torch, softmax=head == "softmax_ce").to(torch.float64 if dtype == np.float64 else torch.float32)
    params = list(net.parameters())
    assert [tuple(p.shape) for p in params] == [s.shape for s in model.slots]
    with torch.no_grad():
        for p, s in zip(params, model.slots):
            p.copy_(torch.from_numpy(w[s.start:s.stop].reshape(s.shape).copy()))
    out = net(torch.from_numpy(X))
    loss_t = torch.nn.functional.cross_entropy(out, torch.from_numpy(y))
    loss_t.backward()
    g_t = np.concatenate([p.grad.numpy().ravel() for p in params])
    z = model.predict(w, X)
    if head == "softmax_ce":
        p = np.exp(z - z.max(1, keepdims=True))
        z = p / p.sum(1, keepdims=True)
    np.testing.assert_allclose(z, out.detach().numpy(), rtol=tol, atol=tol * np.abs(z).max())
    loss, g = model.loss_and_grad(w, X, y, head=head)
    assert loss == pytest.approx(loss_t.item(), rel=tol)
    assert g.dtype == dtype
    assert np.linalg.norm(g - g_t) <= tol * 10 * np.linalg.norm(g_t)


def test_sgd_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not a dependency; cross-check runs only where it is installed")
    r = np.random.default_rng(0)
    w = r.standard_normal(7)
    grads = [r.standard_normal(7) for _ in range(4)]
    for kw in [dict(momentum=0.5), dict(momentum=0.9, weight_decay=0.01), dict(momentum=0.9, dampening=0.1),
               dict(momentum=0.9, nesterov=True), dict()]:
        ours, opt = w.copy(), SGD(lr=0.1, **kw)
        p = torch.nn.Parameter(torch.from_numpy(w.copy()))
        topt = torch.optim.SGD([p], lr=0.1, **kw)
        for g in grads:
            opt.step(ours, g)
            p.grad = torch.from_numpy(g.copy())
            topt.step()
        np.testing.assert_allclose(ours, p.detach().numpy(), rtol=1e-12, err_msg=str(kw))
