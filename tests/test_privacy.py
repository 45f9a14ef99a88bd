"""FedEPM eq. (39) Laplace mechanism: scale (seeded KS tests), code-generator norm property, errors."""
import numpy as np
import pytest
from scipy import stats

from fedrepro.algorithms.base import State
from fedrepro.core.context import RunContext
from fedrepro.sim.privacy import MECHANISMS, LaplaceEPM, build_mechanism, stdlap
from tests.toys import Quadratic


def _state(n_clients, dim, g1, gap2, m=None):
    st = State(w=np.zeros(dim))
    st.upload_info = {"grad_l1": np.asarray(g1, float), "gap_norm2": np.asarray(gap2, float)}
    if m is not None:
        st.upload_info["m"] = m
    return st


def _paper_scale(g1, gap2, eps, k_plus_1, mu0=0.05, c=1e-8, alpha=1.001):
    """nu of eq. (39), written out independently of the implementation."""
    return 2 * np.asarray(g1) / (eps * mu0 * (1 + c * np.asarray(gap2)) * alpha ** k_plus_1)


def test_laplace_generator_has_paper_scale_ks():
    dim, r, k0, eps = 20000, 3, 5, 0.3
    g1, gap2 = [0.8, 2.5, 0.1], [0.0, 1e7, 4e8]
    mech = MECHANISMS["laplace_epm"]({"name": "laplace_epm", "epsilon": eps, "generator": "laplace"})
    ctx = RunContext(k0=k0, seed=11)
    U = np.zeros((3, dim))
    noise = mech(U, np.array([0, 4, 7]), r, _state(3, dim, g1, gap2), ctx) - U
    b = _paper_scale(g1, gap2, eps, (r + 1) * k0)
    for i in range(3):
        assert stats.kstest(noise[i], "laplace", args=(0, b[i])).pvalue > 1e-3
        # a 20% wrong scale is rejected
        assert stats.kstest(noise[i], "laplace", args=(0, 1.2 * b[i])).pvalue < 1e-4
        assert stats.kstest(noise[i], "laplace", args=(0, b[i] / 1.2)).pvalue < 1e-4


def test_code_generator_exact_norm_and_mean():
    dim, r, k0, eps = 14, 0, 12, 0.1
    g1, gap2 = [1.0, 3.0], [5.0, 0.0]
    mech = LaplaceEPM(epsilon=eps)
    U = np.ones((2, dim))
    noise = mech(U, np.array([1, 2]), r, _state(2, dim, g1, gap2), RunContext(k0=k0, seed=0)) - U
    b = _paper_scale(g1, gap2, eps, k0)
    assert np.allclose(np.linalg.norm(noise, axis=1), b * np.sqrt(dim - 1), rtol=1e-12)
    assert np.allclose(noise.sum(axis=1), 0, atol=1e-9 * b.max())


def test_stdlap_properties_and_marginal():
    rng = np.random.default_rng(0)
    x = stdlap(rng, (500, 14))
    assert np.allclose(x.mean(axis=1), 0, atol=1e-12)
    assert np.allclose(np.linalg.norm(x, axis=1), np.sqrt(13))
    # before standardisation log(u1/u2) is exactly Laplace(0, 1)
    rng = np.random.default_rng(1)
    raw = np.log(rng.random(20000) / rng.random(20000))
    assert stats.kstest(raw, "laplace").pvalue > 1e-3


def test_snr_metrics_last_round_and_code():
    dim = 14
    mech = LaplaceEPM(epsilon=0.5)
    st = _state(2, dim, [1.0, 1.0], [0.0, 0.0], m=5)
    U = np.full((2, dim), 3.0)
    Z = mech(U, np.array([0, 3]), 0, st, RunContext(k0=2, seed=1))
    snr = np.log10(np.linalg.norm(U, axis=1) / np.linalg.norm(Z - U, axis=1))
    assert st.metrics["snr"] == pytest.approx(snr.min())
    assert st.metrics["snr_code"] == pytest.approx(min(0.0, snr.min()))   # 3 clients never uploaded


def test_noise_is_seeded_per_round():
    mech = LaplaceEPM()
    st = _state(2, 14, [1.0, 1.0], [0.0, 0.0])
    a = mech(np.zeros((2, 14)), np.array([0, 1]), 4, st, RunContext(k0=2, seed=3))
    b = mech(np.zeros((2, 14)), np.array([0, 1]), 4, st, RunContext(k0=2, seed=3))
    c = mech(np.zeros((2, 14)), np.array([0, 1]), 5, st, RunContext(k0=2, seed=3))
    assert np.array_equal(a, b) and not np.allclose(a, c)


def test_errors():
    with pytest.raises(ValueError, match="generator"):
        LaplaceEPM(generator="gauss")
    with pytest.raises(ValueError, match="epsilon"):
        LaplaceEPM(epsilon=0)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['eps'\]"):
        build_mechanism({"name": "laplace_epm", "eps": 0.1})
    with pytest.raises(ValueError, match="unknown mechanism"):
        build_mechanism({"name": "bogus_mechanism"})
    st = State(w=np.zeros(3))
    with pytest.raises(ValueError, match="grad_l1"):
        LaplaceEPM()(np.zeros((1, 3)), np.array([0]), 0, st, RunContext())


def test_fallback_for_algorithms_without_upload_info():
    """Reusable on other algorithms: with prepare(problem) the mechanism computes ||grad f_i(w)||_1
    and the gap itself (here FedAvg from the FedADMM paper, if present)."""
    from fedrepro.algorithms import algorithm_names, make_algorithm
    from fedrepro.sim.loop import simulate

    P = Quadratic(np.arange(24.0).reshape(6, 4) / 10, client_sizes=np.full(6, 10))
    mech = LaplaceEPM(epsilon=1e3, generator="laplace")
    st = State(w=np.full(4, 0.5))
    mech.prepare(P, RunContext(k0=2))
    U = np.ones((2, 4))
    clients = np.array([1, 4])
    noise = mech(U, clients, 3, st, RunContext(k0=2, seed=0)) - U
    g1 = np.abs(P.client_grads(st.w, clients)).sum(1)
    nu = mech.scales({"grad_l1": g1, "gap_norm2": np.full(2, 4 * 0.25)}, 2, 3, 2)   # ||U_i - w||^2 = 1
    expected = nu[:, None] * RunContext(seed=0).rng("noise", 3).laplace(0.0, 1.0, size=(2, 4))
    assert np.allclose(noise, expected)
    assert "snr" in st.metrics and "snr_code" in st.metrics
    if "fedavg" in algorithm_names():
        res = simulate(P, make_algorithm("fedavg"), k0=2, rho=0.5, max_rounds=5, seed=1,
                       mechanism=build_mechanism({"name": "laplace_epm", "epsilon": 1e3}))
        assert np.isfinite(res.trace[-1]["objective"]) and "snr" in res.trace[-1]


def test_replayed_unit_noise_is_scaled_by_nu_in_call_order():
    from fedrepro.sim.replay import NoiseCursor, ReplayError

    dim, k0, eps = 6, 2, 0.5
    rows = np.random.default_rng(0).normal(size=(5, dim))
    ctx = RunContext(k0=k0, seed=0, replay_noise=NoiseCursor(rows, "rows.npy"))
    mech = LaplaceEPM(epsilon=eps)
    U = np.ones((2, dim))
    g1, gap2 = [1.0, 2.0], [0.0, 3.0]
    first = mech(U, np.array([1, 4]), 0, _state(2, dim, g1, gap2), ctx) - U
    np.testing.assert_allclose(first, _paper_scale(g1, gap2, eps, k0)[:, None] * rows[:2], rtol=1e-13)
    second = mech(U, np.array([0, 3]), 1, _state(2, dim, g1, gap2), ctx) - U
    np.testing.assert_allclose(second, _paper_scale(g1, gap2, eps, 2 * k0)[:, None] * rows[2:4], rtol=1e-13)
    with pytest.raises(ReplayError, match="rows.npy has 5 rows but round 2 needs 2 more"):
        mech(U, np.array([0, 3]), 2, _state(2, dim, g1, gap2), ctx)


def test_no_mechanism_specs_build_none():
    for spec in (None, {}, {"name": "none"}):
        assert build_mechanism(spec) is None
