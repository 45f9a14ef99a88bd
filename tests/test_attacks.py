"""Attack modules (fedrepro.sim.attacks) on a tiny softmax problem."""
import numpy as np
import pytest

from fedrepro.algorithms import RunContext, make_algorithm
from fedrepro.sim.attacks import ATTACKS, build_attack
from tests.toys import softmax_toy


_problem = softmax_toy


def test_label_flip_only_faulty_workers():
    prob = _problem()
    y0 = prob.y.copy()
    att = ATTACKS["label_flip"]({"name": "label_flip", "faulty": [6, 7]})
    att.prepare(prob, RunContext())
    faulty_idx = np.concatenate([prob.parts[6], prob.parts[7]])
    honest_idx = np.concatenate(prob.parts[:6])
    np.testing.assert_array_equal(prob.train_labels[faulty_idx], 9 - y0[faulty_idx])
    np.testing.assert_array_equal(prob.train_labels[honest_idx], y0[honest_idx])
    np.testing.assert_array_equal(prob.y, y0)                 # metrics keep the true labels
    np.testing.assert_array_equal(prob.reliable, np.arange(6))
    # default B = 4 -> the last four workers
    att = ATTACKS["label_flip"]({"name": "label_flip"})
    att.prepare(prob, RunContext())
    np.testing.assert_array_equal(np.flatnonzero(prob.faulty), [4, 5, 6, 7])


def _uploads(alg_name, attack_spec, k0=1, **params):
    prob = _problem()
    alg = make_algorithm(alg_name, **params)
    ctx = RunContext(k0=k0, seed=3)
    att = build_attack(attack_spec)
    att.prepare(prob, ctx)
    st = alg.init(prob, ctx)
    clients = np.arange(prob.m)
    st.w = alg.aggregate(st, prob, ctx, 0)
    alg.begin_round(st, prob, ctx, clients, 0)
    for t in range(k0):
        alg.local_step(st, prob, ctx, clients, 0, t)
    U = alg.upload(st, prob, ctx, clients, 0)
    return prob, alg, st, ctx, U, att.corrupt(U, clients, 0, st, prob, alg, ctx)


def test_gaussian_scale_and_rows():
    c = 1e4
    prob, alg, st, ctx, U, V = _uploads("sgd_mean", {"name": "gaussian", "c": c, "faulty": [5, 6, 7]})
    np.testing.assert_array_equal(V[:5], U[:5])
    xi = ctx.rng("attack", 0).standard_normal((1, 3, prob.dim))[0]
    np.testing.assert_allclose(V[5:], c * xi)
    assert np.std(V[5:]) == pytest.approx(c, rel=0.1)


def test_gaussian_on_frpg_goes_through_the_model():
    lam = 1.6
    for name, k0, extra in [("frpg", 1, {}), ("lfrpg", 3, {"T": 3})]:
        prob, alg, st, ctx, U, V = _uploads(name, {"name": "gaussian", "faulty": [7]}, k0=k0, **extra)
        S = alg.slots_per_upload
        models = 1e4 * ctx.rng("attack", 0).standard_normal((S, 1, prob.dim))
        z = st.w - models[:, 0]
        g = lam * z / np.linalg.norm(z, axis=1, keepdims=True)
        np.testing.assert_allclose(V[7], g.mean(axis=0), rtol=1e-12)
        assert np.all(np.linalg.norm(V, axis=1) <= lam + 1e-12)
        np.testing.assert_array_equal(V[:7], U[:7])


def test_no_attack_B0_is_identity_and_silent_drops_faulty():
    # one semantics for the workflow and the CLI: no block, {} or {name: none} naming nobody -> no attack
    for spec in (None, {}, {"name": "none"}, {"name": "none", "B": 0}):
        assert build_attack(spec) is None
    # {name: none} naming workers: they follow the protocol but are left out of the metrics
    prob, alg, st, ctx, U, V = _uploads("sgd_mean", {"name": "none", "faulty": [0, 1]})
    np.testing.assert_array_equal(U, V)
    assert prob.senders(np.arange(prob.m)).all()
    np.testing.assert_array_equal(prob.faulty, [True] * 2 + [False] * 6)
    prob, alg, st, ctx, U, V = _uploads("sgd_mean", {"name": "silent", "faulty": [6, 7]})
    np.testing.assert_array_equal(U, V)
    np.testing.assert_array_equal(prob.senders(np.arange(prob.m)), [True] * 6 + [False] * 2)
    w = st.w.copy()
    alg.receive(st, prob, ctx, np.arange(prob.m), U, 0)
    np.testing.assert_allclose(st.w, w - 3.0 * U[:6].mean(axis=0))   # a_1 = 3/sqrt(1)


def test_unknown_attack_rejected():
    with pytest.raises(ValueError, match="unknown attack"):
        build_attack({"name": "bogus_attack"})
