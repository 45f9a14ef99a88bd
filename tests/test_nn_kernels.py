"""The compiled element-wise passes and heads of the NN engine (fedrepro.nn.kernels) against the
numpy expressions they replace: bit-identical for the element-wise passes, to rounding for the heads."""
import numpy as np
import pytest

from fedrepro.nn import Model, dense, dropout, kernels, logits_ce, softmax_ce

DTYPES = [np.float32, np.float64]


def _same_bits(a, b):
    """Equal including the sign of zeros and NaN positions."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint32 if a.dtype == np.float32 else np.uint64),
                                  b.view(np.uint32 if b.dtype == np.float32 else np.uint64))


def _special(dtype, shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -1e-30]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_and_its_gradient_are_numpys_bit_for_bit(dtype):
    x = _special(dtype, (7, 13))
    out = np.empty_like(x)
    kernels.relu(x.reshape(-1), out.reshape(-1))
    _same_bits(out, np.maximum(x, 0))
    g = _special(dtype, (7, 13), seed=1)
    g.reshape(-1)[6:12] = -np.abs(g.reshape(-1)[6:12])       # negative gradients where y <= 0 -> -0.0
    y = np.maximum(x, 0)
    dx = np.empty_like(g)
    kernels.relu_grad(g.reshape(-1), y.reshape(-1), dx.reshape(-1))
    with np.errstate(invalid="ignore"):                         # inf * 0 is NaN in both
        _same_bits(dx, g * (y > 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_add_is_numpys_bit_for_bit(dtype):
    r = np.random.default_rng(2)
    y = r.standard_normal((9, 50)).astype(dtype)
    b = r.standard_normal(9).astype(dtype)
    expect = y + b[:, None]
    kernels.add_rows(y, b)
    _same_bits(y, expect)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B", [1, 3, 8, 13, 50, 128])
def test_row_sums_follow_numpys_order_for_any_strides(dtype, B):
    g = np.random.default_rng(B).standard_normal((17, B)).astype(dtype) * 1e3
    out = np.empty(17, dtype)
    kernels.row_sums(g, out)
    _same_bits(out, g.sum(axis=1))                              # C rows: numpy's pairwise order
    out_f = np.empty(17, dtype)
    kernels.row_sums(np.asfortranarray(g), out_f)               # the same sums whatever the strides
    _same_bits(out_f, out)


def _numpy_heads(z, y):
    """The numpy formulas of spec 003 §5 (what the compiled heads replace)."""
    B, rows = z.shape[0], np.arange(z.shape[0])
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    ce_loss = -np.log(p[rows, y])
    ce_grad = p.copy()
    ce_grad[rows, y] -= 1
    ce_grad /= B
    q = np.exp(p) / np.exp(p).sum(axis=1, keepdims=True)
    ds_loss = np.log(np.exp(p).sum(axis=1)) - p[rows, y]
    gp = q.copy()
    gp[rows, y] -= 1
    gp /= B
    ds_grad = p * (gp - (gp * p).sum(axis=1, keepdims=True))
    return (ce_loss, ce_grad), (ds_loss, ds_grad)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_compiled_heads_equal_the_numpy_formulas(dtype, rtol):
    r = np.random.default_rng(3)
    z = (4 * r.standard_normal((50, 10))).astype(dtype)
    y = r.integers(0, 10, 50)
    (ce_l, ce_g), (ds_l, ds_g) = _numpy_heads(z.astype(np.float64), y)
    for fn, (l_ref, g_ref) in ((logits_ce, (ce_l, ce_g)), (softmax_ce, (ds_l, ds_g))):
        losses, g = fn(z, y)
        assert losses.dtype == dtype and g.dtype == dtype
        np.testing.assert_allclose(losses, l_ref, rtol=rtol, atol=rtol * 1e-2)
        np.testing.assert_allclose(g, g_ref, rtol=rtol, atol=rtol * 1e-3)
        # the engine's call: z a transposed view, the gradient written into a transposed buffer
        zt = np.ascontiguousarray(z.T)
        gt = np.empty_like(zt)
        losses_t, g_t = fn(zt.T, y, out=gt.T)
        _same_bits(losses_t, losses)
        _same_bits(gt.T, g)
        losses_only, none = fn(z, y, grad=False)
        assert none is None
        _same_bits(losses_only, losses)


@pytest.mark.parametrize("fn", [logits_ce, softmax_ce])
def test_heads_reject_labels_out_of_range(fn):
    z = np.zeros((3, 4))
    for bad in (4, -1):
        with pytest.raises(ValueError, match=rf"labels must be in \[0, 4\), got {bad} at position 1"):
            fn(z, np.array([0, bad, 2]))
    with pytest.raises(ValueError, match="labels"):
        fn(z, np.array([0, 1]))


def test_dropout_masks_are_drawn_per_example_whatever_the_internal_layout():
    """Training-mode dropout draws uniforms in (B, features) order: the same seed gives the
    mask (rng.random((B, F)) >= p) / (1 - p) on the inputs as the user sees them."""
    p, B, F = 0.3, 6, 11
    model = Model([dropout(p), dense(4)], (F,), head="logits_ce", dtype=np.float64)
    w = model.init(np.random.default_rng(0), dtype=np.float64)
    X = np.random.default_rng(1).standard_normal((B, F))
    W, b = (v for v in model.unflatten(w)[1])
    keep = (np.random.default_rng(5).random((B, F), dtype=np.float32) >= p) / (1 - p)
    np.testing.assert_allclose(model.forward(w, X, rng=np.random.default_rng(5)), (X * keep) @ W.T + b,
                               rtol=1e-13)


def test_read_only_parameters_data_and_labels_are_accepted():
    """Broadcast parameter views and memory-mapped data arrive read-only; the kernels only read them."""
    from fedrepro.nn import build_model

    model = build_model("mlp1", head="logits_ce")
    w = model.init(np.random.default_rng(0))
    X = np.random.default_rng(1).random((7, 784), dtype=np.float32)
    y = np.arange(7) % 10
    expect = model.loss_and_grad(w, X, y)
    for a in (w, X, y):
        a.flags.writeable = False
    loss, g = model.loss_and_grad(w, X, y)
    assert loss == expect[0]
    _same_bits(g, expect[1])
    for fn in (logits_ce, softmax_ce):
        z = model.forward(w, X)
        z.flags.writeable = False
        assert np.isfinite(fn(z, y)[0]).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 6, 8, 5), (2, 7, 5, 3)])     # odd H / W: a remainder row / column
def test_compiled_2x2_maxpool_is_the_numpy_passes_bit_for_bit(dtype, shape):
    """MaxPool2d(2) on a C-contiguous map runs kernels.maxpool2; a non-contiguous one the numpy
    passes. Same values, same choices (ties, +-0, NaN, inf), same routed gradients."""
    from fedrepro.nn.layers import MaxPool2d, Workspace

    r = np.random.default_rng(4)
    x = r.integers(-2, 3, size=shape).astype(dtype)             # many ties
    x.reshape(-1)[:8] = [np.nan, -0.0, 0.0, -0.0, np.inf, -np.inf, 0.0, np.nan]
    bsz, h, w, c = shape
    gy = r.standard_normal((bsz, h // 2, w // 2, c)).astype(dtype)
    gy.reshape(-1)[:4] = [np.inf, -0.0, np.nan, -1.0]
    layer = MaxPool2d(2)
    y_c, cache_c = layer.forward((), x, None, Workspace())
    y_n, cache_n = layer.forward((), np.asfortranarray(x), None, Workspace())
    assert cache_c[1] is None and cache_n[1] is not None        # the two paths ran
    _same_bits(y_c, y_n)
    with np.errstate(invalid="ignore"):
        dx_c = layer.backward((), cache_c, gy, (), True, Workspace())
        dx_n = layer.backward((), cache_n, gy, (), True, Workspace())
    _same_bits(np.ascontiguousarray(dx_c), np.ascontiguousarray(dx_n))
    # a transposed gradient view (as Flatten's backward hands it) gives the same
    gy_t = np.ascontiguousarray(gy.transpose(3, 1, 2, 0)).transpose(3, 1, 2, 0)
    _same_bits(np.ascontiguousarray(layer.backward((), cache_c, gy_t, (), True, Workspace())), dx_c)


@pytest.mark.parametrize("fn", [logits_ce, softmax_ce])
def test_heads_reject_float_labels_and_a_wrong_out_buffer(fn):
    """The compiled heads index with the labels and write into ``out`` unchecked: both are
    validated first (no silent truncation of 1.7 to 1, no write past a short buffer)."""
    z = np.zeros((3, 4))
    with pytest.raises(ValueError, match="integer labels"):
        fn(z, np.array([0.0, 1.7, 2.0]))
    for bad in (np.empty((3, 3)), np.empty((3, 4), np.float32), np.empty((4, 3)).T[:2], [[0.0] * 4] * 3):
        with pytest.raises(ValueError, match="out must be a float64 array of shape"):
            fn(z, np.array([0, 1, 2]), out=bad)
    good = np.empty((4, 3)).T                                  # any strides of the right shape and dtype
    assert fn(z, np.array([0, 1, 2]), out=good)[1] is good


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k, s, ho", [(5, 1, 6), (3, 2, 4), (1, 1, 3)])
def test_compiled_col2im_is_the_strided_adds_bit_for_bit(dtype, k, s, ho):
    """kernels.col2im_add (a convolution's input gradient from its per-offset blocks) against the
    loop of kh*kw strided numpy adds it replaced, on a view of a larger block buffer (as the
    layer's workspace hands it): every element gets its adds in the same order."""
    bsz, c, wo = 3, 5, ho + 1
    r = np.random.default_rng(5)
    buf = _special(dtype, (k * k, (bsz + 2) * ho * wo, c), seed=6)
    blocks = buf[:, :bsz * ho * wo]                            # not contiguous
    hp, wp = s * (ho - 1) + k, s * (wo - 1) + k
    d0 = r.standard_normal((bsz, hp, wp, c)).astype(dtype)
    expected = d0.copy()
    b6 = blocks.reshape(k, k, bsz, ho, wo, c)
    with np.errstate(invalid="ignore"):
        for i in range(k):
            for j in range(k):
                expected[:, i:i + s * ho:s, j:j + s * wo:s, :] += b6[i, j]
    got = d0.copy()
    kernels.col2im_add(blocks, got, ho, wo, k, s)
    _same_bits(got, expected)
