"""FedEPM / SFedAvg / SFedProx: client update = minimiser of (23), harness behaviour, variants,
stop rules, and (if the Adult mirror files exist) agreement with the central optimum."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from fedrepro.algorithms import make_algorithm
from fedrepro.algorithms.base import RunContext
from fedrepro.algorithms.sfedavg import SFedAvg
from fedrepro.sim.privacy import build_mechanism
from fedrepro.core.sampling import UniformSampler
from fedrepro.sim.loop import sample_clients, simulate
from fedrepro.sim.stopping import EPMCodeRules, build_stop
from tests.toys import Quadratic

ADULT = Path("/work/shared/datasets/adult")


def _run(alg, problem, k0=3, rho=0.5, seed=0, rounds=60, eps=1e3, stop=None, **params):
    return simulate(problem, make_algorithm(alg, **params), k0=k0, rho=rho, max_rounds=rounds, seed=seed,
                    stop=stop, mechanism=build_mechanism({"name": "laplace_epm", "epsilon": eps}))


# ---- client update (eq. (20)) = argmin of the linearised sub-problem (23) ------------------------------
@pytest.mark.parametrize("scaling", ["over_di", "paper"])
@pytest.mark.parametrize("seed", range(4))
def test_client_update_minimises_subproblem_23(scaling, seed):
    rng = np.random.default_rng(seed)
    P = Quadratic.random(m=6, dim=4, seed=seed)
    alg = make_algorithm("fedepm", mu_scaling=scaling, eta=0.3, lam=0.2, mu0=rng.uniform(0.5, 3), c=0.1)
    ctx = RunContext(k0=3, rho=1.0, seed=seed)
    st = alg.init(P, ctx)
    st.w = rng.normal(size=4)
    st.W = rng.normal(size=(6, 4)) * 2
    st.G = rng.normal(size=(6, 4))
    S, r, t = np.array([1, 3, 4]), 2, 1
    gap = st.W[S] - st.w
    new = alg._update(st, P, ctx, S, r, t, gap)
    k = r * ctx.k0 + t
    for row, i in enumerate(S):
        mu = alg.mu0 * (1 + alg.c * gap[row] @ gap[row]) * alg.alpha ** (k + 1)
        mu = mu / P.client_sizes[i] if scaling == "over_di" else mu
        for j in range(4):
            # (23) per coordinate with v = w_i - w: g v + mu/2 (v - a)^2 + lam |v| + eta/2 v^2
            g, a = st.G[i, j], gap[row, j]
            h = lambda v: g * v + 0.5 * mu * (v - a) ** 2 + 0.2 * abs(v) + 0.15 * v * v
            res = minimize_scalar(h, bounds=(-50, 50), method="bounded", options={"xatol": 1e-12})
            best = min([res.x, 0.0], key=h)
            assert new[row, j] - st.w[j] == pytest.approx(best, abs=1e-6)


def test_default_penalty_formula():
    alg = make_algorithm("fedepm")
    lam, eta = alg.penalty(50, 0.5)
    assert eta == pytest.approx(1.2e-5) and lam == pytest.approx(0.6e-5)
    assert alg.penalty(100, 0.5)[1] == pytest.approx(2e-5 * 0.6 * 1.5)       # code form 1.8e-5


# ---- harness ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alg", ["fedepm", "sfedavg", "sfedprox"])
def test_runs_are_seeded_and_record_metrics(alg):
    kw = {"eta": 0.05, "lam": 0.01} if alg == "fedepm" else {}
    r1 = _run(alg, Quadratic.random(), **kw)
    r2 = _run(alg, Quadratic.random(), **kw)
    assert np.array_equal(r1.w, r2.w)
    rec = r1.trace[-1]
    for key in ("err", "objective_per_client", "snr", "snr_code"):
        assert key in rec and np.isfinite(rec[key])
    assert r1.trace[0]["objective_per_client"] == pytest.approx(r1.trace[0]["objective"] / 8)


def test_fedepm_approaches_optimum_on_quadratic():
    P = Quadratic.random(m=10, seed=3)
    res = _run("fedepm", P, rho=1.0, rounds=300, eps=1e6, eta=0.5, lam=1e-4, mu_scaling="paper", mu0=1.0)
    assert np.linalg.norm(res.w - P.optimum()) < 0.05 * np.linalg.norm(P.optimum())


def test_fedepm_gradients_outside_local_time():
    """G = grad f_i(w) is computed once per round by the server block, never in the local phase."""
    P = Quadratic.random()
    res = _run("fedepm", P, k0=5, rounds=10, eta=0.05, lam=0.01)
    assert res.rounds == 10 and P.local_grad_calls == 0
    P2 = Quadratic.random()
    res2 = _run("sfedavg", P2, k0=5, rounds=10)
    assert P2.local_grad_calls == res2.rounds * 4                     # k0 - 1 local gradients per round
    P3 = Quadratic.random()
    res3 = _run("sfedprox", P3, k0=5, rounds=10)
    assert P3.local_grad_calls == res3.rounds * (3 * 5 - 1)           # ell k0 - 1


def test_sfedavg_aggregation_sets():
    P = Quadratic.random(m=10)
    alg = make_algorithm("sfedavg")
    ctx = RunContext(k0=2, rho=0.3, seed=5, sampler=UniformSampler(10, 0.3, 5))
    st = alg.init(P, ctx)
    assert np.allclose(alg._server(st, P, ctx, 0), st.Z.to_array().mean(0))            # S^0 = [m]
    st.fresh = np.array([2, 7])
    assert np.allclose(alg._server(st, P, ctx, 3), st.Z[[2, 7]].mean(0))
    new = make_algorithm("sfedavg", aggregate_over="new")
    assert np.allclose(new._server(st, P, ctx, 3), st.Z[sample_clients(10, 0.3, 5, 3)].mean(0))


def test_sfedavg_new_aggregation_follows_replayed_selections():
    """aggregate_over='new' averages the clients of the coming round as the loop draws them:
    under replayed selections those, not a re-derived uniform draw (the context's sampler)."""
    from fedrepro.sim.replay import Replay

    P = Quadratic.random(m=10)
    rounds = 4
    chosen = {r: np.array(ids) for r, ids in enumerate([[0, 1, 2], [3, 4, 5], [6, 7, 8], [1, 5, 9], [0, 4, 9]])}
    seen = []

    class Spy(SFedAvg):
        def _server(self, state, problem, ctx, r):
            seen.append(ctx.clients(r))
            return super()._server(state, problem, ctx, r)

    simulate(P, Spy(aggregate_over="new"), k0=2, rho=0.3, max_rounds=rounds, seed=5,
             replay=Replay(selections=chosen))
    assert [s.tolist() for s in seen] == [chosen[r].tolist() for r in range(rounds + 1)]
    assert any(not np.array_equal(chosen[r], sample_clients(10, 0.3, 5, r)) for r in range(rounds))


def test_sfedavg_step_38():
    P = Quadratic.random(m=4)
    alg = make_algorithm("sfedavg")
    ctx = RunContext(k0=4, rho=1.0)
    st = alg.init(P, ctx)
    S = np.arange(4)
    assert np.allclose(alg._gamma(st, ctx, S, 3, 0), 2 * P.client_sizes / np.sqrt(8 + 3))   # k = 12: ceil = 3
    assert np.allclose(alg._gamma(st, ctx, S, 3, 1), 2 * P.client_sizes / np.sqrt(8 + 4))   # k = 13: ceil = 4


def test_initial_uploads_code_noise():
    P = Quadratic.random(m=5, dim=14)
    st = make_algorithm("fedepm").init(P, RunContext(seed=1))
    Z = st.Z.to_array()
    assert np.allclose(np.linalg.norm(Z, axis=1), 20 * np.sqrt(13))
    assert np.allclose(Z.mean(axis=1), 0)


def test_variants_validated():
    with pytest.raises(ValueError, match="mu_scaling"):
        make_algorithm("fedepm", mu_scaling="over_d")
    with pytest.raises(ValueError, match="ens_sign"):
        make_algorithm("fedepm", ens_sign="minus")
    with pytest.raises(ValueError, match="aggregate_over"):
        make_algorithm("sfedavg", aggregate_over="all")
    with pytest.raises(ValueError, match="aggregate_over"):
        make_algorithm("sfedprox", aggregate_over="all")
    with pytest.raises(ValueError, match="ell"):
        make_algorithm("sfedprox", ell=0)
    with pytest.raises(ValueError, match="init_noise"):
        make_algorithm("sfedprox", init_noise="gauss")
    with pytest.raises(ValueError, match="mu_prox"):
        make_algorithm("sfedavg", mu_prox=1e-5)          # baselines' parameters stay separate
    assert set(make_algorithm("fedepm").variants()) == {"init_noise", "client_loop", "mu_scaling", "ens_sign"}


# ---- stop rules (spec 001 Sec. 3.5) ------------------------------------------------------------------------
def _trace(F, err, g2=None):
    g2 = g2 or [1.0] * len(F)
    return [{"round": i, "objective": f, "err": e, "grad_norm2": g} for i, (f, e, g) in enumerate(zip(F, err, g2))]


def test_epm_code_rules():
    P = Quadratic.random(dim=14)
    rule = build_stop({"rule": "epm", "variant": "code"}, P)
    assert rule.tol == pytest.approx(1.4e-8)
    assert rule.check(_trace([30.0, 29.0, 28.0], [1, 1, 1e-9])) == "gradient"          # stop3 at any s
    assert rule.check(_trace([30.0, 29.0, 28.0], [1, 1, 1])) is None                   # s <= 3
    assert rule.check(_trace([28, 29, 28.5, 29.5], [1, 0.5, 0.6, 1.1])) == "increase"   # stop2
    assert rule.check(_trace([28, 29, 28.5, 29.5], [1, 0.5, 0.6, 0.9])) is None         # err not above max
    assert rule.check(_trace([28, 29.6, 28.5, 29.5], [1, 0.5, 0.6, 1.1])) is None       # F not above max
    flat = [27.0, 27.0 + 1e-6, 27.0 - 1e-6, 27.0]
    assert np.var(flat, ddof=1) < 1.4e-8 / 28
    assert rule.check(_trace(flat, [1, 1, 1, 1])) == "variance"                        # stop1


def test_epm_paper_rules():
    P = Quadratic.random(dim=14)
    rule = build_stop({"rule": "epm", "variant": "paper"}, P)
    assert isinstance(rule, EPMCodeRules) and rule.literal and rule.tol == pytest.approx(1.4e-7)
    assert rule.check(_trace([28, 29, 28.5, 29.5], [1, 0.5, 0.6, 1.1])) is None        # no stop2
    assert rule.check(_trace([30, 29], [1, 1], [1, 5e-7])) == "gradient"               # ||sum grad||^2
    F = [27.0, 27.0 + 5e-5, 27.0 - 5e-5, 27.0]          # var 1.7e-9: paper tol/28 = 5e-9, code tol/28 = 5e-10
    assert rule.check(_trace(F, [1] * 4)) == "variance"
    assert build_stop({"rule": "epm"}, P).check(_trace(F, [1] * 4)) is None
    with pytest.raises(ValueError, match="variant"):
        build_stop({"rule": "epm", "variant": "literal"}, P)


# ---- Adult (mirror files) --------------------------------------------------------------------------------
@pytest.mark.skipif(not (ADULT / "adult.mat").exists(), reason="Adult mirror files absent")
def test_adult_fedepm_reaches_central_optimum(capsys):
    from fedrepro.problems.adult import adult_problem, load_adult_mat

    X, y = load_adult_mat(ADULT)
    P = adult_problem(X, y, m=50, seed=0)
    assert P.client_sizes.sum() == 45222 and P.client_sizes.min() > 0.01 * 45222 / 50
    assert P.objective(np.zeros(14)) / 50 == pytest.approx(np.log(2))
    w_star = P.solve_exact()
    f_star = P.objective(w_star) / 50
    res = simulate(P, make_algorithm("fedepm"), k0=12, rho=0.5, max_rounds=500, seed=0,
                   stop=build_stop({"rule": "epm", "variant": "code"}, P),
                   mechanism=build_mechanism({"name": "laplace_epm", "epsilon": 0.1}))
    f_ours = res.final["objective_per_client"]
    with capsys.disabled():
        print(f"\nAdult m=50 seed 0: FedEPM f/m = {f_ours:.6f} after CR = {res.rounds} ({res.stop_reason}); "
              f"central optimum f*/m = {f_star:.6f}; ||w*|| = {np.linalg.norm(w_star):.1f}")
    assert res.status == "converged"
    assert abs(f_ours - f_star) <= 0.01 * f_star
    assert 0.52 < f_star < 0.58


@pytest.mark.skipif(not (ADULT / "adult.mat").exists(), reason="Adult mirror files absent")
def test_adult_normalisation_sanity_row():
    from fedrepro.problems.adult import load_adult_mat
    from fedrepro.problems.glm import _col_l2

    X, _ = load_adult_mat(ADULT)
    row0 = _col_l2(X)[0]
    assert np.allclose(row0[:4], [0.002885, 0.003913, 0.004911, 0.000428], atol=2e-6)


# ---- figures and claims on synthetic results frames ------------------------------------------------------
def _fake_results(rng):
    """Tidy frames shaped like the workflow's (fig3/fig4/fig5), with FedEPM best everywhere."""
    base = {"sfedavg": (60, 0.02, 1.0), "sfedprox": (20, 0.04, 0.8), "fedepm": (8, 0.002, 0.3)}
    frames = {}
    for exp, grid in {"fig3": [{"m": m, "k0": k} for m in (50, 100) for k in (4, 8, 12, 16, 20)],
                      "fig4": [{"m": 50, "k0": 12, "rho": r} for r in (0.2, 0.6, 1.0)],
                      "fig5": [{"m": 50, "k0": 12, "epsilon": e} for e in (0.1, 0.5, 0.9)]}.items():
        rows = []
        for point in grid:
            for alg, (cr, lct, snr) in base.items():
                for inst in range(3):
                    k0, rho = point["k0"], point.get("rho", 0.5)
                    CR = int(cr * 12 / k0 * (1.1 - 0.1 * rho)) + inst
                    for s in range(CR + 1):
                        rows.append({**point, "algorithm": alg, "instance": inst, "seed": inst, "cell": f"{exp}{point}{alg}{inst}",
                                     "round": s, "objective": 50 * (0.55 + 0.15 / (1 + s)),
                                     "objective_per_client": 0.55 + 0.15 / (1 + s), "rho": rho,
                                     "snr": snr + np.log10(point.get("epsilon", 0.1) * 10) + 0.01 * inst,
                                     "status": "converged" if alg != "sfedavg" or inst else "max_rounds",
                                     "rounds": CR, "run_cpu_time": CR * lct * k0 * (point["m"] / 50) * (1 + rho),
                                     "run_local_cpu_time": CR * lct * k0 * (point["m"] / 50),
                                     # wall times in the reverse order (a loaded machine): never used
                                     "run_wall_time": 1.0 / (CR * lct), "run_local_time": 1.0 / (CR * lct)})
        frames[exp] = pd.DataFrame(rows)
    frames["table1"] = frames["fig3"].copy()
    more = frames["fig3"][frames["fig3"]["algorithm"] == "fedepm"].copy()
    more["instance"] += 3
    more["cell"] = more["cell"] + "more"
    frames["fig3_fedepm_trials"] = more
    from fedrepro.experiments.results import summarize
    return frames, {e: summarize(f) for e, f in frames.items()}


def test_figures_and_claims_render(tmp_path):
    import yaml

    from fedrepro.claims import evaluate
    from fedrepro.papers.fedepm.claims import CHECKS
    from fedrepro.papers.fedepm.figures import FIGURES, TABLES

    frames, summaries = _fake_results(np.random.default_rng(0))
    for key, spec in {**FIGURES, **TABLES}.items():
        if not set(spec.experiments) <= set(frames):
            continue
        spec.render({e: frames[e] for e in spec.experiments}, {e: summaries[e] for e in spec.experiments},
                    tmp_path / key)
    for key in FIGURES:
        assert (tmp_path / f"{key}.pdf").exists() and (tmp_path / f"{key}.png").exists()
    for suffix in (".md", ".csv", ".tex"):
        assert (tmp_path / f"table1{suffix}").exists()
    tab = pd.read_csv(tmp_path / "table1.csv")
    assert tab.loc[(tab.m == 50) & (tab.k0 == 4), "fedepm_paper"].item() == 0.0011
    claims = yaml.safe_load(open(Path(__file__).resolve().parents[1] / "workflow/papers/fedepm.claims.yaml"))["claims"]
    table = evaluate(claims, CHECKS, frames, summaries, "fedepm")
    assert set(table.loc[table["verdict"] == "not testable here", "claim"]) <= {
        "variant_mu_paper_stalls", "variant_aggregate_new_more_cr", "variant_paper_stop_caps_baselines",
        "table1_avg_over_epm_k20"}      # the fake LCTs put it within its ±40% timing noise of the band's edge
    k20 = table.set_index("claim").loc["table1_avg_over_epm_k20"]
    assert k20["verdict"] != "not testable here" or "within measurement noise" in k20["why"]
    verdict = dict(zip(table["claim"], table["verdict"]))
    for cid in ("fig3_fewest_cr", "table1_order", "fig5_snr_grows_with_epsilon", "fig5_fedepm_smallest_snr",
                "fig4_fedepm_best", "fig3_cr_falls_with_k0", "fig3_shortest_tct", "table1_fedepm_lowest",
                "fig4_tct_rises_with_rho"):       # time claims hold on CPU time although wall time is reversed
        assert verdict[cid] == "holds", cid
    assert verdict["fig3_no_capped_runs"] == "fails"             # the fake SFedAvg trial 0 hit the cap
    empty = evaluate(claims, CHECKS, {}, {}, "fedepm")
    assert (empty["verdict"] == "not testable here").all() and empty["why"].str.startswith("results missing").all()


@pytest.mark.skipif(not (ADULT / "adult.mat").exists(), reason="Adult mirror files absent")
def test_adult_builder_reads_processed_npz(tmp_path):
    from fedrepro.data.dataset import Dataset
    from fedrepro.problems import build_problem
    from fedrepro.problems.adult import load_adult_mat

    X, y = load_adult_mat(ADULT)
    Dataset("adult", X, y.astype(np.int64)).save(tmp_path / "adult.npz")
    P = build_problem({"name": "adult_logreg", "m": 100}, 7, data_dir=tmp_path)
    Q = build_problem({"name": "adult_logreg", "m": 100}, 7, data_dir=ADULT)
    assert P.m == 100 and np.array_equal(P.client_sizes, Q.client_sizes)
    assert P.client_sizes.min() > 0.01 * 45222 / 100
    w = np.linspace(-50, 50, 14)
    assert np.allclose(P.client_losses(w), Q.client_losses(w))
    R = build_problem({"name": "adult_logreg", "m": 100}, 8, data_dir=tmp_path)
    assert not np.array_equal(P.client_sizes, R.client_sizes)          # a new partition per trial seed
    with pytest.raises(ValueError, match="unknown key"):
        build_problem({"name": "adult_logreg", "m": 50, "k": 3}, 0, data_dir=tmp_path)
    with pytest.raises(ValueError, match="reg_scaling"):
        build_problem({"name": "adult_logreg", "reg_scaling": "x"}, 0, data_dir=tmp_path)


@pytest.mark.parametrize("alg", ["fedepm", "sfedavg", "sfedprox"])
def test_sequential_client_loop_matches_vectorized(alg):
    kw = {"eta": 0.05, "lam": 0.01} if alg == "fedepm" else {}
    a = _run(alg, Quadratic.random(), rounds=8, **kw)
    b = _run(alg, Quadratic.random(), rounds=8, client_loop="sequential", **kw)
    assert np.allclose(a.w, b.w, rtol=1e-10, atol=1e-12) and a.rounds == b.rounds


# ---- claim checks: each must be able to fail on valid data ----------------------------------------------
def _claim(cid):
    import yaml

    claims = yaml.safe_load(open(Path(__file__).resolve().parents[1] / "workflow/papers/fedepm.claims.yaml"))["claims"]
    return next(c for c in claims if c["id"] == cid)


def _judge(cid, summaries):
    from fedrepro.claims import evaluate
    from fedrepro.papers.fedepm.claims import CHECKS

    c = _claim(cid)
    row = evaluate([c], CHECKS, {e: pd.DataFrame() for e in summaries}, summaries, "fedepm").iloc[0]
    return row["verdict"], row["our_value"], row["why"]


def _runs(rows, **const):
    base = {"status": "converged", "stop_reason": "gradient", "rho": 0.5, "snr": 0.5, "run_wall_time": 1.0,
            "run_local_time": 1.0}
    return pd.DataFrame([{**base, **const, **r} for r in rows])


def _table1(lct):
    """table1 summaries with mean LCT (s per round) ``lct[(m, k0)][alg]``; 2 trials, 10 rounds each."""
    rows = [{"algorithm": a, "m": m, "k0": k0, "instance": i, "rounds": 10, "run_local_cpu_time": 10 * v * (1 + 0.01 * i),
             "run_cpu_time": 30 * v, "objective_per_client": 0.55}
            for (m, k0), per in lct.items() for a, v in per.items() for i in range(2)]
    return {"table1": _runs(rows)}


def _paper_like_lct(epm_slope=0.000075, avg_per_k0=0.00074):
    """Table I shaped like the paper's (m = 50, 100): SFedAvg linear in k0, SFedProx 2.3x, FedEPM a
    per-round constant plus ``epm_slope`` per k0."""
    out = {}
    for m, scale in ((50, 1.0), (100, 1.5)):
        for k0 in (4, 8, 12, 16, 20):
            avg = scale * avg_per_k0 * k0
            out[(m, k0)] = {"sfedavg": avg, "sfedprox": 2.3 * avg, "fedepm": scale * (0.0008 + epm_slope * k0)}
    return out


def test_table1_ratio_claims_are_bands_that_fail_outside():
    s = _table1(_paper_like_lct())
    for cid in ("table1_prox_over_avg", "table1_avg_over_epm_k4", "table1_avg_over_epm_k20",
                "table1_baseline_growth", "table1_fedepm_lct_grows_slowly", "table1_order", "table1_m100_above_m50"):
        assert _judge(cid, s)[0] == "holds", cid
    # FedEPM's LCT linear in k0 (no per-round constant): its growth x5 leaves the x1.5 band around 2.09,
    # and SFedAvg/FedEPM at k0 = 20 (3.6) is inside the x2 band around 6.43 (>= 3.215) but within the
    # claim's ±40% timing noise of its edge: not decided
    lin = _paper_like_lct()
    for (m, k0), per in lin.items():
        per["fedepm"] = (1.0 if m == 50 else 1.5) * 0.0002 * k0
    verdict, value, why = _judge("table1_fedepm_lct_grows_slowly", _table1(lin))
    assert verdict == "fails" and float(value) == pytest.approx(5.0, rel=0.02) and "x5.0" in why
    verdict, value, why = _judge("table1_avg_over_epm_k20", _table1(lin))
    assert verdict == "not testable here" and "within measurement noise" in why, (verdict, value, why)
    # ratios far from the paper's (beyond the noise): SFedProx 6x SFedAvg (band to 4.62); SFedAvg only 1.2x
    # FedEPM at k0 = 4 (band from 1.68)
    far = _paper_like_lct()
    for per in far.values():
        per["sfedprox"] = 6 * per["sfedavg"]
    assert _judge("table1_prox_over_avg", _table1(far))[0] == "fails"
    near = _paper_like_lct()
    near[(50, 4)]["fedepm"] = near[(50, 4)]["sfedavg"] / 1.2
    assert _judge("table1_avg_over_epm_k4", _table1(near))[0] == "fails"
    assert _judge("table1_avg_over_epm_k20", _table1(near))[0] == "holds"
    steep = _paper_like_lct()
    steep[(50, 20)]["sfedavg"] = 10 * steep[(50, 4)]["sfedavg"]         # growth x10 > 4 x 2 x 1.2
    assert _judge("table1_baseline_growth", _table1(steep))[0] == "fails"


def _fig3(cr, f=None, trials=5, exp="fig3", first=0):
    """fig3-like summaries: ``cr(alg, m, k0, trial)`` rounds and ``f(alg, m, k0, trial)`` final f/m."""
    f = f or (lambda a, m, k0, i: 0.55)
    rows = [{"algorithm": a, "m": m, "k0": k0, "instance": i, "rounds": int(cr(a, m, k0, i)),
             "objective_per_client": f(a, m, k0, i), "run_cpu_time": 1.0, "run_local_cpu_time": 0.5}
            for a in ("sfedavg", "sfedprox", "fedepm") for m in (50, 100) for k0 in (4, 8, 12, 16, 20)
            for i in range(first, first + trials)]
    return {exp: _runs(rows)}


def _fig3_all(cr, trials=5):
    return _fig3(cr, trials=trials) | _fig3(cr, trials=trials, exp="fig3_fedepm_trials", first=trials)


def test_cr_monotone_claim_fails_on_a_significant_rise_only():
    base = {"sfedavg": 300, "sfedprox": 60, "fedepm": 40}
    smooth = lambda a, m, k0, i: base[a] * 4 / k0 + (i % 3)              # noqa: E731
    assert _judge("fig3_cr_monotone_fraction", _fig3_all(smooth)) == ("holds", "1", "")
    # FedEPM at m = 100: CR 10 at k0 = 16 and 15 at k0 = 20 in every trial: a significant rise, 23 of 24 steps
    target = ("fedepm", 100, 20)
    rise = lambda a, m, k0, i: 15 + (i % 3) if (a, m, k0) == target else smooth(a, m, k0, i)  # noqa: E731
    verdict, value, why = _judge("fig3_cr_monotone_fraction", _fig3_all(rise))
    assert verdict == "fails" and float(value) == pytest.approx(23 / 24, abs=1e-4) and "fedepm m=100 k0 16->20" in why
    # the same mean rise with a trial-to-trial spread of +-12 CR: within the noise, counted as non-increasing
    noisy = lambda a, m, k0, i: rise(a, m, k0, i) + (12 * (-1) ** i if (a, m, k0) == target else 0)  # noqa: E731
    assert _judge("fig3_cr_monotone_fraction", _fig3_all(noisy, trials=4))[0] == "holds"
    from fedrepro.papers.fedepm.claims import cr_monotone_in_k0_fraction

    out = cr_monotone_in_k0_fraction({}, _fig3_all(noisy, trials=4))
    assert out.value == 1.0 and "within the noise" in out.why and "fedepm m=100 k0 16->20: +5.00" in out.why


def test_final_objective_spread_claim_uses_fig2_panels_and_can_fail():
    cr = lambda a, m, k0, i: 10                                            # noqa: E731
    close = lambda a, m, k0, i: 0.55 + 0.001 * (a == "sfedavg") + 0.02 * (k0 == 8)   # noqa: E731
    verdict, value, _ = _judge("fig2_same_objective", _fig3(cr, close))
    assert verdict == "holds" and float(value) == pytest.approx(0.001)    # k0 = 8 is not a Fig. 2 panel
    apart = lambda a, m, k0, i: close(a, m, k0, i) + 0.006 * (a == "sfedavg" and m == 100 and k0 == 4)  # noqa: E731
    verdict, value, why = _judge("fig2_same_objective", _fig3(cr, apart))
    assert verdict == "fails" and float(value) == pytest.approx(0.007, abs=1e-6) and "m=100, k0=4" in why
