"""aspire analysis, claims and figures on hand-made result frames: each check can hold and can fail."""
import json

import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import Depends, NotTestable, Outcome, decide, load_claims
from fedrepro.claims import query
from fedrepro.claims.evaluate import check_name
from fedrepro.papers import registry
from fedrepro.papers.aspire import analysis, claims
from fedrepro.papers.aspire import figures as figs

SEEDS = tuple(range(1, 11))   # >= 6 decide a holds (claims.verdicts); a fail among k components needs 2 * 0.5**n <= 0.05 / k


def _jitter(alg, seed, scale):
    """A reproducible per-(method, seed) perturbation: the seed-to-seed noise of a real run."""
    return scale * np.random.default_rng([sum(map(ord, alg)), seed]).standard_normal()


def _runs(exp, spec, m=3, rounds=(0, 10), extra=None, noise=0.05):
    """A trace frame: spec = {algorithm: (acc_w, loss_w, std[, params])} per seed (final values plus a
    small per-seed jitter; round 0 gets a worse start)."""
    rows = []
    for alg, vals in spec.items():
        params = vals[3] if len(vals) > 3 else {}
        for s in SEEDS:
            cell = f"{alg}-{json.dumps(params, sort_keys=True)}-{s}"
            for r in rounds:
                last = r == rounds[-1]
                row = {"experiment": exp, "cell": cell, "algorithm": alg, "seed": s, "round": r, "m": m,
                       "params": json.dumps(params), "problem": json.dumps({"model": "quick"}),
                       "acc_w": vals[0] + _jitter(alg + "a", s, noise) if last else 0.0,
                       "loss_w": vals[1] + _jitter(alg + "l", s, noise / 100) if last else 2.0,
                       "acc_std": vals[2] + _jitter(alg + "s", s, noise) if last else 30.0, "virtual_time": float(r)}
                row.update((extra or {}).get(alg, {}) if last else {})
                rows.append(row)
    return pd.DataFrame(rows)


T3 = {"individual": (10, np.nan, 20), "mix_even": (50, 1.0, 8), "fedavg_steps": (50.05, 1.001, 8.1),
      "afl": (55, 0.9, 5), "drfa_prox": (56, 0.88, 4.5), "aspire": (57, 0.85, 3), "aspire_per": (56.95, 0.852, 3.2)}

# the claims by id; a per-dataset claim is named by its id less the dataset (t3_drfa_beats_afl: the SC-MA claim)
CLAIMS = {c["id"]: c for c in load_claims("aspire")}
READINGS = registry.checks("aspire")


def _claim(name):
    return CLAIMS.get(f"{name}_scma") or CLAIMS[name]


def _check(name):
    """The claim's check as the engine calls it: a check of claims.py with the claim's ``args:``, or its reading
    written as data (claims.yaml)."""
    c = _claim(name)
    fn = READINGS[check_name(c)]
    return lambda frames, summaries: fn(frames, summaries, **(c.get("args") or {}))


def _t3(**over):
    spec = {**T3, **over}
    return {"table3_scma": _runs("table3_scma", spec, m=15)}


def _verdict(check, out):
    """The engine's verdict of a check's value under the claims file's test of that check."""
    value = out.value if isinstance(out, Outcome) else out
    c = _claim(check)            # the claims file's test of that claim (compare, paper_value, tolerance)
    return decide(value, c.get("paper_value"), c["compare"], c.get("tolerance")).verdict


def test_table3_frame_means_and_individual_best():
    t = analysis.table3_frame(_t3())
    row = t.set_index("algorithm").loc["aspire"]
    vals = [57 + figs_jitter for figs_jitter in (_jitter("aspirea", s, 0.05) for s in SEEDS)]
    assert row["acc_w"] == pytest.approx(np.mean(vals)) and row["acc_w_std"] == pytest.approx(np.std(vals))
    assert row["paper_acc_w"] == 56.31 and row["seeds"] == len(SEEDS)
    ind = [10 + _jitter("individuala", s, 0.05) for s in SEEDS]
    assert t.set_index("algorithm").loc["individual", "acc_w"] == pytest.approx(np.mean(ind))


def test_advantage_is_paired_by_seed_and_oriented():
    fin = analysis.finals(_t3()["table3_scma"])
    acc, loss = claims._components(fin, [("aspire", "afl")], ("acc_w", "loss_w"))
    a = fin[fin["algorithm"] == "aspire"].set_index("seed")
    b = fin[fin["algorithm"] == "afl"].set_index("seed")
    np.testing.assert_allclose(acc.values, (a["acc_w"] - b["acc_w"]).loc[list(SEEDS)].to_numpy())
    np.testing.assert_allclose(loss.values, (b["loss_w"] - a["loss_w"]).loc[list(SEEDS)].to_numpy())
    assert acc.n == len(SEEDS) and "ASPIRE-EASE ahead of AFL" in acc.label


@pytest.mark.parametrize("check, breaking", [
    ("t3_aspire_beats_baselines", {"aspire": (55.5, 0.85, 3)}),
    ("t3_aspire_lowest_std", {"aspire": (57, 0.85, 6)}),
    ("t3_afl_beats_erm", {"afl": (45, 0.9, 5)}),
    ("t3_fedavg_mix_even", {"fedavg_steps": (52, 1.0, 8)}),
    ("t3_drfa_beats_afl", {"drfa_prox": (54, 0.88, 4.5)}),
    ("t3_ind_worst", {"individual": (52, np.nan, 20)}),
    ("t3_erm_beats_ind", {"individual": (52, np.nan, 5)}),
    ("t3_per_within", {"aspire_per": (56, 0.86, 3.2)}),
])
def test_table3_checks_hold_and_fail(check, breaking):
    fn = _check(check)
    assert _verdict(check, fn(_t3(), {})) == "holds"
    assert _verdict(check, fn(_t3(**breaking), {})) == "fails"


def test_a_tie_is_not_a_win():
    tie = _t3(drfa_prox=T3["afl"])
    frame = tie["table3_scma"]
    afl = frame[frame["algorithm"] == "afl"]
    afl = afl.assign(algorithm="drfa_prox", cell=afl["cell"] + "-copy")      # DRFA-Prox = AFL, seed by seed
    tie = {"table3_scma": pd.concat([frame[frame["algorithm"] != "drfa_prox"], afl], ignore_index=True)}
    assert _verdict("t3_drfa_beats_afl", _check("t3_drfa_beats_afl")(tie, {})) == "fails"


def test_per_within_uses_the_papers_std():
    # SC-MA: the paper prints ASPIRE-EASE's Acc_w std 0.29 pp; 0.1 pp behind holds, 0.5 pp behind fails
    assert _verdict("t3_per_within", _check("t3_per_within")(_t3(aspire_per=(56.9, 0.85, 3)), {})) == "holds"
    assert _verdict("t3_per_within", _check("t3_per_within")(_t3(aspire_per=(56.5, 0.85, 3)), {})) == "fails"
    # doing better than ASPIRE-EASE by more than one std does not contradict the statement
    assert _verdict("t3_per_within", _check("t3_per_within")(_t3(aspire_per=(60, 0.80, 3)), {})) == "holds"


def test_noisy_table3_differences_stay_undecided():
    noisy = {"table3_scma": _runs("table3_scma", {**T3, "drfa_prox": (55.05, 0.88, 4.5)}, m=15, noise=2.0)}
    assert _verdict("t3_drfa_beats_afl", _check("t3_drfa_beats_afl")(noisy, {})) == "undecided"


def test_table3_checks_without_individual_runs_are_not_testable():
    fm = {"table3_fmnist3": _runs("table3_fmnist3", {k: v for k, v in T3.items() if k != "individual"})}
    assert isinstance(_check("t3_ind_worst")(fm, {}), NotTestable)
    assert _verdict("t3_aspire_beats_baselines", _check("t3_aspire_beats_baselines")(fm, {})) == "holds"


def _sweep(exp, per_setting, m=15):
    """A sweep experiment's frame: {setting label: {algorithm: (acc_w, loss_w, std)}}."""
    parts = []
    for label, spec in per_setting.items():
        f = _runs(exp, spec, m=m)
        parts.append(f.assign(setting=label, cell=f["cell"] + "-" + label))
    return pd.concat(parts, ignore_index=True)


def test_table3_claims_are_decided_across_the_sweep_of_unstated_parameters():
    fam = {k: T3[k] for k in claims.SWEPT}
    same = {lab: fam for lab in claims.SWEEP_LABELS}
    check = _check("t3_aspire_beats_baselines")
    out = check({**_t3(), "sweep3_scma": _sweep("sweep3_scma", same)}, {})
    assert isinstance(out, Outcome) and _verdict("t3_aspire_beats_baselines", out) == "holds"
    assert "holds at every swept value" in out.why and "ρ1 = 2: holds" in out.detail
    # ASPIRE-EASE behind AFL at rho1 = 2 only: depends (its own verdict), naming rho1 alone, with the table
    flip = {**same, "rho1=2": {**fam, "aspire": (50, 1.0, 3)}}
    out = check({**_t3(), "sweep3_scma": _sweep("sweep3_scma", flip)}, {})
    assert isinstance(out, Depends)
    assert "depends on the unstated ρ1:" in out.reason and "fails at ρ1 = 2" in out.reason
    assert "η_h = 0.05: holds" in out.table
    # behind at every setting: fails, and says so
    bad = {lab: {**fam, "aspire": (50, 1.0, 3)} for lab in claims.SWEEP_LABELS}
    out = check({**_t3(aspire=(50, 1.0, 3)), "sweep3_scma": _sweep("sweep3_scma", bad)}, {})
    assert _verdict("t3_aspire_beats_baselines", out) == "fails" and "fails at every swept value" in out.why
    # a setting's runs replace only the swept methods; the baselines are the table's (paired by seed)
    ds, settings = claims.sweep_settings({**_t3(), "sweep3_scma": _sweep("sweep3_scma", flip)}, "table3")
    assert ds == "scma" and [lab for lab, _, _ in settings][:2] == [claims.DEFAULT_LABEL, "ρ1 = 2"]
    fin = dict((lab, f) for lab, f, _ in settings)["ρ1 = 2"]
    assert sorted(fin["algorithm"].value_counts().unique()) == [len(SEEDS)]
    assert (fin.loc[fin["algorithm"] == "aspire", "acc_w"] < 51).all()
    # a claim about baselines only is not swept (a reading written as data)
    assert "t3_drfa_beats_afl" not in claims.CHECKS
    assert not isinstance(_check("t3_drfa_beats_afl")({**_t3(), "sweep3_scma": _sweep("sweep3_scma", flip)}, {}),
                          NotTestable)
    # without sweep runs the default decides, and says it was not swept
    alone = check(_t3(), {})
    assert isinstance(alone, Outcome) and "not swept" in alone.detail
    with pytest.raises(ValueError, match="not in the sweep's labels"):
        check({**_t3(), "sweep3_scma": _sweep("sweep3_scma", {"rho1=9": fam})}, {})


def test_table4_claims_are_decided_across_the_sweep():
    t4 = {"mix_even": (0, 0, 0), "fedavg_steps": (0, 0, 0), "afl": (0, 0, 0), "drfa_prox": (0, 0, 0),
          "aspire": (0, 0, 0)}
    rates = {"mix_even": 50.0, "fedavg_steps": 52.0, "afl": 75.0, "drfa_prox": 30.0, "aspire": 15.0}
    extra = {a: {"attack_success": v} for a, v in rates.items()}
    base = _runs("table4_scma", t4, m=16, extra=extra)
    base["attack_success"] = base["attack_success"] + base["seed"] * 0.01
    sw = _runs("sweep4_scma", {k: t4[k] for k in ("mix_even", "aspire")}, m=16,
               extra={"mix_even": {"attack_success": 50.0}, "aspire": {"attack_success": 40.0}})
    sw["attack_success"] = sw["attack_success"] + sw["seed"] * 0.02
    sw = pd.concat([sw.assign(setting=lab, cell=sw["cell"] + lab) for lab in claims.SWEEP_LABELS], ignore_index=True)
    sw.loc[(sw["setting"] == "eta_h=0.05") & (sw["algorithm"] == "aspire"), "attack_success"] = 10.0
    out = _check("t4_aspire_lowest")({"table4_scma": base, "sweep4_scma": sw}, {})
    assert isinstance(out, Depends) and "depends on the unstated" in out.reason
    assert "ρ1" in out.reason.split(":")[0] and "η_h" not in out.reason.split(":")[0]


def test_table4_checks():
    def t4(rates):
        spec = {a: (50, 1.0, 5) for a in rates}
        extra = {a: {"attack_success": r + _jitter(a, 0, 0.1)} for a, r in rates.items()}
        frame = _runs("table4_scma", spec, m=16, extra=extra)
        last = frame["round"] == 10
        frame.loc[last, "attack_success"] += [_jitter(a, s, 0.5) for a, s in frame.loc[last, ["algorithm", "seed"]]
                                              .itertuples(index=False)]
        return {"table4_scma": frame}
    good = t4({"mix_even": 40, "fedavg_steps": 41, "afl": 70, "drfa_prox": 25, "aspire": 10})
    bad = t4({"mix_even": 40, "fedavg_steps": 41, "afl": 30, "drfa_prox": 45, "aspire": 50})
    for name in ("t4_aspire_lowest", "t4_afl_highest", "t4_drfa_below_erm", "t4_erm_below_afl", "t4_ordering"):
        assert _verdict(name, _check(name)(good, {})) == "holds", name
        assert _verdict(name, _check(name)(bad, {})) == "fails", name
    # the ordering fails on its one broken link alone
    link = t4({"mix_even": 40, "fedavg_steps": 41, "afl": 70, "drfa_prox": 25, "aspire": 30})
    assert _verdict("t4_ordering", _check("t4_ordering")(link, {})) == "fails"
    assert _verdict("t4_afl_highest", _check("t4_afl_highest")(link, {})) == "holds"


def _fig3(values, m=3, noise=0.05):
    frames = []
    for gamma, (acc, loss) in values.items():
        spec = {"aspire": (acc, loss, 5, {"Gamma": gamma})}
        frame = _runs("fig3_fmnist3", spec, m=m, noise=noise)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    return out


def _same_runs_beyond(frame, sat):
    """Give the Γ >= sat runs the values of the Γ = sat runs (what our code does: identical runs)."""
    f = frame.copy()
    g = f["params"].map(lambda p: json.loads(p).get("Gamma"))
    base = f[g == sat].set_index(["seed", "round"])
    for gamma in sorted(set(g[g > sat])):
        idx = f.index[g == gamma]
        keys = list(zip(f.loc[idx, "seed"], f.loc[idx, "round"]))
        f.loc[idx, ["acc_w", "loss_w"]] = base.loc[keys, ["acc_w", "loss_w"]].to_numpy()
    return f


def test_fig3_checks_hold_and_fail():
    grows = _same_runs_beyond(_fig3({0.0: (40, 1.0), 1.0: (45, 0.9), 2.0: (50, 0.8), 3.0: (50, 0.8)}), 2.0)
    drops = _fig3({0.0: (40, 1.0), 1.0: (50, 0.8), 2.0: (30, 1.2), 3.0: (30, 1.21)})
    for name in ("f3_enhanced", "f3_gradual"):
        assert _verdict(name, _check(name)({"fig3_fmnist3": grows}, {})) == "holds", name
        assert _verdict(name, _check(name)({"fig3_fmnist3": drops}, {})) == "fails", name
    # a flat step (the set stops growing) is not "gradually enhanced"
    flat = _same_runs_beyond(_fig3({0.0: (40, 1.0), 1.0: (45, 0.9), 2.0: (45, 0.9), 3.0: (45, 0.9)}), 2.0)
    flat.loc[flat["params"].str.contains('"Gamma": 2.0'), ["acc_w", "loss_w"]] = \
        flat.loc[flat["params"].str.contains('"Gamma": 1.0'), ["acc_w", "loss_w"]].to_numpy()
    assert _verdict("f3_gradual", _check("f3_gradual")({"fig3_fmnist3": flat}, {})) == "fails"
    assert _verdict("f3_plateau", claims.f3_plateau({"fig3_fmnist3": grows}, {})) == "holds"
    assert _verdict("f3_plateau", claims.f3_plateau({"fig3_fmnist3": drops}, {})) == "fails"
    g0 = grows[grows["params"].str.contains('"Gamma": 0.0')]
    mix = g0.assign(algorithm="mix_even", params="{}", experiment="table3_fmnist3")
    assert _verdict("f3_gamma0_is_mix_even",
                    claims.f3_gamma0_is_mix_even({"fig3_fmnist3": grows, "table3_fmnist3": mix}, {})) == "holds"
    other = mix.assign(acc_w=mix["acc_w"] + 1e-9)
    assert _verdict("f3_gamma0_is_mix_even",
                    claims.f3_gamma0_is_mix_even({"fig3_fmnist3": grows, "table3_fmnist3": other}, {})) == "fails"


def test_cdnorm_support_grows_until_the_budget_saturates():
    f = np.array([0.3, -1.2, 0.8, 0.1])
    vals = [claims.cdnorm_support(4, 1.0, g, f) for g in (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)]
    assert vals[0] == pytest.approx(f.mean())                       # Γ = 0: p = q
    assert np.all(np.diff(vals[:5]) > 1e-6) and vals[5] == pytest.approx(vals[4], abs=1e-9)   # even N: up to N
    odd = [claims.cdnorm_support(3, 1.0, g, f[:3]) for g in (1.0, 2.0, 2.5, 3.0)]
    assert odd[1] > odd[0] + 1e-6 and odd[3] == pytest.approx(odd[1], abs=1e-9)             # odd N: flat from N - 1


def test_set_size_statement_fails_for_odd_N():
    out = _check("f3_set_grows")({}, {})
    comps = {r.label.split(":")[0]: float(r.values[0]) for r in out.value}
    assert comps["N = 6, p̃ = 1 q"] > 0 and comps["N = 15, p̃ = 1 q"] == 0 and comps["N = 3, p̃ = 0.5 q"] == 0
    assert _verdict("f3_set_grows", out) == "fails"


def test_fig1_statements_hold_from_the_formulas():
    for name in ("f1_w1_fastest", "f1_four_sets_grow", "f1_ellipsoid_m", "f1_eps_grows", "f1_box_cdnorm_cheapest"):
        assert _verdict(name, _check(name)({}, {})) == "holds", name


def _fig4(hits, planes=None, seeds=SEEDS):
    """hits = {algorithm: (time it drops to its final loss, final loss)}; per seed the times shift by
    a small jitter."""
    rows = []
    for alg, (hit_time, final) in hits.items():
        for s in seeds:
            hit = hit_time + abs(_jitter(alg, s, 2.0))
            for t in range(0, 101, 2):
                loss = 2.0 if t < hit else final
                rows.append({"experiment": "fig4_scma", "cell": f"{alg}-{s}", "algorithm": alg, "seed": s, "round": t,
                             "m": 15, "params": "{}", "problem": "{}", "acc_w": 0.0, "loss_w": loss, "acc_std": 1.0,
                             "virtual_time": float(t), "n_planes": (planes or {}).get(alg, 1) + (s % 2)})
    return {"fig4_scma": pd.DataFrame(rows)}


def test_per_seed_time_to_target():
    t = query.times_to_target(_fig4({"aspire": (20, 1.0), "afl": (50, 1.2)})["fig4_scma"], "loss_w")
    assert list(t.index) == list(SEEDS)
    for s in SEEDS:   # target = AFL's final 1.2: ASPIRE-EASE reaches it when it drops (first grid time >= hit)
        assert t.loc[s, "aspire"] == 2 * np.ceil((20 + abs(_jitter("aspire", s, 2.0))) / 2)


def test_fig4_checks_and_the_no_target_guard():
    good = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                  "drfa_prox": (70, 1.1)}, planes={"aspire": 3, "aspire_cp": 9})
    slow = _fig4({"aspire": (80, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (30, 1.0), "afl": (50, 1.2),
                  "drfa_prox": (70, 1.1)}, planes={"aspire": 9, "aspire_cp": 3})
    for name in ("f4_aspire_fastest", "f4_async_gain", "f4_ease_before_cp", "f5_ease_fewer_planes"):
        assert _verdict(name, _check(name)(good, {})) == "holds", name
        assert _verdict(name, _check(name)(slow, {})) == "fails", name
    one = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                 "drfa_prox": (70, 1.1)}, seeds=(1,))
    assert _verdict("f4_ease_before_cp", _check("f4_ease_before_cp")(one, {})) == "undecided"
    diverged = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 3.0),
                      "drfa_prox": (70, 1.1)})
    assert isinstance(_check("f4_aspire_fastest")(diverged, {}), NotTestable)


def _swept(exp, per_setting):
    """A ``sweep_<figure>`` frame: {setting label: the swept methods' runs at that setting}."""
    return pd.concat([f.assign(experiment=exp, setting=lab, cell=f["cell"] + "-" + lab) for lab, f in per_setting.items()],
                     ignore_index=True)


def test_fig4_and_fig5_statements_are_decided_across_the_sweep():
    good = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                  "drfa_prox": (70, 1.1)}, planes={"aspire": 3, "aspire_cp": 9})["fig4_scma"]
    slow = _fig4({"aspire": (80, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                  "drfa_prox": (70, 1.1)}, planes={"aspire": 9, "aspire_cp": 3})["fig4_scma"]
    swept = lambda f: f[f["algorithm"].isin(claims.FIG_SWEPT["fig4"])]
    same = {lab: swept(good) for lab in claims.SWEEP_LABELS}
    for name in ("f4_ease_before_cp", "f5_ease_fewer_planes"):
        out = _check(name)({"fig4_scma": good, "sweep_fig4_scma": _swept("sweep_fig4_scma", same)}, {})
        assert isinstance(out, Outcome) and _verdict(name, out) == "holds", name
        assert out.why.startswith("holds at every swept value of the unstated ρ1, η_h, α_w, κ1 (5)"), name
        # slower than ASPIRE-CP, with more planes, at rho1 = 2 only: depends on rho1, with the per-setting table
        flip = _swept("sweep_fig4_scma", {**same, "rho1=2": swept(slow)})
        out = _check(name)({"fig4_scma": good, "sweep_fig4_scma": flip}, {})
        assert isinstance(out, Depends) and out.reason.startswith("depends on the unstated ρ1: holds at default"), name
        assert "fails at ρ1 = 2" in out.reason and "κ1α_w = 0.1: holds" in out.table, name
        # slower at every setting: fails
        every = _swept("sweep_fig4_scma", {lab: swept(slow) for lab in claims.SWEEP_LABELS})
        assert _verdict(name, _check(name)({"fig4_scma": slow, "sweep_fig4_scma": every}, {})) == "fails", name
    # a setting's frame: the setting's runs of the swept methods, the default's AFL and DRFA-Prox (paired by seed)
    exp, got = claims.fig_settings({"fig4_scma": good, "sweep_fig4_scma": flip}, "fig4")
    assert exp == "fig4_scma" and [lab for lab, _, _ in got] == [claims.DEFAULT_LABEL] + [
        shown for shown, _ in claims.SWEEP_LABELS.values()]
    at = dict((lab, f[exp]) for lab, f, _ in got)["ρ1 = 2"]
    pd.testing.assert_frame_equal(at[at["algorithm"] == "afl"].drop(columns="setting").reset_index(drop=True),
                                  good[good["algorithm"] == "afl"].reset_index(drop=True), check_dtype=False)
    assert (at.loc[at["algorithm"] == "aspire", "n_planes"] >= 9).all()
    # without sweep runs: the default's own value, marked "not swept"
    alone = _check("f4_ease_before_cp")({"fig4_scma": good}, {})
    assert isinstance(alone, Outcome) and alone.detail.endswith("not swept") and "median time" in alone.detail
    # a setting without a target to time (its worst method diverged) is named
    diverged = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 3.0), "afl": (50, 1.2),
                      "drfa_prox": (70, 1.1)})["fig4_scma"]
    out = _check("f4_ease_before_cp")({"fig4_scma": good, "sweep_fig4_scma": _swept(
        "sweep_fig4_scma", {**same, "eta_h=0.05": swept(diverged)})}, {})
    assert isinstance(out, NotTestable) and out.reason.startswith("at η_h = 0.05: in no seed is the worst method")
    # runs of a method the figure does not sweep, or an unknown setting, are refused
    with pytest.raises(ValueError, match="does not sweep"):
        claims.fig_settings({"fig4_scma": good, "sweep_fig4_scma": _swept("sweep_fig4_scma", {"rho1=2": good})}, "fig4")
    with pytest.raises(ValueError, match="not in the sweep's labels"):
        claims.fig_settings({"fig4_scma": good, "sweep_fig4_scma": _swept("sweep_fig4_scma", {"rho1=9": swept(good)})},
                            "fig4")


def test_fig3_statements_are_decided_across_the_sweep():
    grows = _same_runs_beyond(_fig3({0.0: (40, 1.0), 1.0: (45, 0.9), 2.0: (50, 0.8), 3.0: (50, 0.8)}), 2.0)
    drops = _fig3({0.0: (40, 1.0), 1.0: (50, 0.8), 2.0: (30, 1.2), 3.0: (30, 1.21)})
    same = {lab: grows for lab in claims.SWEEP_LABELS}
    out = _check("f3_enhanced")({"fig3_fmnist3": grows, "sweep_fig3_fmnist3": _swept("sweep_fig3_fmnist3", same)}, {})
    assert _verdict("f3_enhanced", out) == "holds" and "holds at every swept value" in out.why
    flip = _swept("sweep_fig3_fmnist3", {**same, "eta_h=0.05": drops})
    out = _check("f3_enhanced")({"fig3_fmnist3": grows, "sweep_fig3_fmnist3": flip}, {})
    assert isinstance(out, Depends) and out.reason.startswith("depends on the unstated η_h:")


def test_every_sweep_runs_at_its_default_experiments_seeds_changing_one_parameter():
    """Each sweep (Tables 3-4: sweep3/4_<ds>; Figs. 2-5: sweep_<figure>) runs at the seeds of the experiment it
    is paired with, and each of its runs is that experiment's run of the same method and seed with one unstated
    parameter changed (issue #43 point 4). The tables' sweeps run at every scale; the figures' at verify and paper
    only (run_at: quick's seeds decide none of their claims)."""
    from fedrepro.experiments.expansion import all_cells

    swept = {"rho1", "eta_h", "alpha_w_factor", "kappa1_times_alpha_w"}
    for scale in ("quick", "verify", "paper"):
        cells = {e: c for (p, e), c in all_cells({"papers": ["aspire"], "scale": scale}).items()}
        sweeps = [e for e in cells if e.startswith("sweep")]
        assert len(sweeps) == (8 if scale == "quick" else 17)
        assert scale != "quick" or not any(e.startswith("sweep_fig") for e in sweeps)
        for e in sweeps:
            base = e[len("sweep_"):] if e.startswith("sweep_") else f"table{e[5]}{e[6:]}"
            assert {c["seed"] for c in cells[e]} == {c["seed"] for c in cells[base]}, (scale, e)
            runs = {(c["algorithm"], c["seed"], json.dumps({k: v for k, v in c["params"].items() if k not in swept},
                                                          sort_keys=True), json.dumps(c["problem"], sort_keys=True),
                     c.get("time_budget")): c for c in cells[base]}
            for c in cells[e]:
                rest = {k: v for k, v in c["params"].items() if k not in swept}
                key = (c["algorithm"], c["seed"], json.dumps(rest, sort_keys=True), json.dumps(c["problem"], sort_keys=True),
                       c.get("time_budget"))
                assert key in runs, (scale, e, c["cell"])
                changed = {k for k in swept if c["params"].get(k) != runs[key]["params"].get(k)}
                assert len(changed) == 1, (scale, e, c["cell"], changed)


def test_fig2_check():
    spec = {"H_max": 1.0, "c0": 0.0, "m0": 1.0, "sigma": 0.1, "schedule": [{"worker": 2, "start": 10.0, "end": 40.0,
                                                                            "factor": 4.0}]}
    t = np.arange(0, 50, 0.5)
    parts = [pd.DataFrame({"virtual_time": t, "seed": s, "active_workers": np.where((t >= 12 + s / 2) & (t < 41 + s / 2), 1, 3),
                           "m": 3, "delays": json.dumps(spec)}) for s in SEEDS]
    df = pd.concat(parts, ignore_index=True)
    assert _verdict("f2_adp_adapts", claims.f2_adp_adapts({"fig2": df}, {})) == "holds"
    assert _verdict("f2_adp_adapts", claims.f2_adp_adapts({"fig2": df.assign(active_workers=3)}, {})) == "fails"
    assert _verdict("f2_adp_adapts", claims.f2_adp_adapts({"fig2": df[df["seed"] == 1]}, {})) == "undecided"


def test_s_is_one_echo():
    frames = _t3()
    assert _verdict("s_is_one", claims.s_is_one(frames, {})) == "holds"
    f = frames["table3_scma"].copy()
    f.loc[f["algorithm"] == "aspire", "params"] = json.dumps({"S": 3})
    assert _verdict("s_is_one", claims.s_is_one({"table3_scma": f}, {})) == "fails"


def test_fig2_renders(tmp_path):
    spec = {"H_max": 1.0, "c0": 0.0, "m0": 1.0, "schedule": [{"worker": 2, "start": 10.0, "end": 40.0, "factor": 4.0}]}
    t = np.arange(0, 50, 0.5)
    df = pd.DataFrame({"virtual_time": t, "active_workers": np.where((t >= 15) & (t < 41), 1, 3),
                       "delays": json.dumps(spec), **{f"delay_est_{j}": 1.0 + 3 * (j == 2) * ((t > 12) & (t < 42))
                                                    for j in range(3)}})
    figs.fig2({"fig2": df}, {}, tmp_path / "fig2")
    assert (tmp_path / "fig2.png").stat().st_size > 5000


def test_outputs_render_with_missing_datasets(tmp_path):
    frames = _t3()
    figs.table3(frames, {}, tmp_path / "table3")
    md = (tmp_path / "table3.md").read_text()
    assert "ASPIRE-EASE" in md and "Not built (dataset not available offline): SHL, Person Activity, Fashion-MNIST" in md
    figs.fig3({"fig3_fmnist3": _fig3({0.0: (40, 1.0), 1.0: (45, 0.9)})}, {}, tmp_path / "fig3")
    assert (tmp_path / "fig3.png").stat().st_size > 5000
    f4 = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                "drfa_prox": (70, 1.1)}, planes={"aspire": 3, "aspire_cp": 9})
    for name in ("fig4", "fig5"):
        figs.FIGURES[name].render(f4, {}, tmp_path / name)
        assert (tmp_path / f"{name}.png").stat().st_size > 5000
    figs.TABLES["fig4_time"].render(f4, {}, tmp_path / "fig4_time")
    assert "ASPIRE-EASE" in (tmp_path / "fig4_time.md").read_text()
    t4 = _runs("table4_scma", {a: (50, 1.0, 5) for a in analysis.TABLE4_METHODS}, m=16,
               extra={a: {"attack_success": 10.0 + i, "pi_last": 0.01} for i, a in enumerate(analysis.TABLE4_METHODS)})
    figs.table4({"table4_scma": t4}, {}, tmp_path / "table4")
    assert "success attack rate" in (tmp_path / "table4.md").read_text()


def test_true_mean_delays_follow_the_schedule():
    spec = {"H_max": 1.0, "c0": 0.0, "m0": 1.0, "schedule": [{"worker": 2, "start": 10.0, "end": 40.0, "factor": 4.0}]}
    d = figs.true_mean_delays([5.0, 20.0, 45.0], spec, 3)
    np.testing.assert_allclose(d, [[1, 1, 1], [1, 1, 4], [1, 1, 1]])
    with pytest.raises(ValueError, match="H_max = 1"):
        figs.true_mean_delays([0.0], {"H_max": 5.0}, 3)


def test_cell_requests_come_from_the_work():
    """The work model of aspire's requests (what a kind without a measured sample in
    benchmarks/results/paper_bill.json requests)."""
    from fedrepro.experiments.expansion import all_cells
    from fedrepro.experiments.resources import estimated_memory_mb as cell_memory_mb
    from fedrepro.experiments.resources import estimated_runtime_min as cell_runtime_min
    from fedrepro.experiments.resources import worker_cell_cost

    quick = {(c["experiment"], c["algorithm"]): c for v in all_cells({"papers": ["aspire"], "scale": "quick"}, ".").values()
             for c in v}
    paper = {(c["experiment"], c["algorithm"]): c for v in all_cells({"papers": ["aspire"], "scale": "paper"}, ".").values()
             for c in v}
    key = ("table3_scma", "aspire")
    assert cell_runtime_min(quick[key], "quick") < cell_runtime_min(paper[key], "paper") < 24 * 60
    assert 1024 < cell_memory_mb(quick[key]) < cell_memory_mb(paper[key]) < 4096
    capped = dict(paper[("fig4_scma", "aspire")])
    uncapped = {k: v for k, v in capped.items() if k != "time_budget"}
    assert worker_cell_cost(capped)["runtime_min"] < worker_cell_cost(uncapped)["runtime_min"] / 2


def test_skipped_list_names_partial_outputs():
    from fedrepro.data.plan import DataPlan
    from fedrepro.experiments.report_markdown import skipped_markdown
    from fedrepro.papers.registry import paper_outputs

    cells = {("aspire", e): [] for e in ("table3_scma", "table3_shl")}
    skipped = {("aspire", "table3_shl"): ["shl"]}
    outputs = paper_outputs({"papers": ["aspire"]}, cells | {("aspire", e): [] for e in _all_aspire_experiments()},
                            skipped, ".")
    text = skipped_markdown(skipped, outputs, DataPlan({"data": {"download": False}}))
    assert "| aspire/table3 | shl |" in text and "| aspire/table5 | shl |" in text


def _all_aspire_experiments():
    from fedrepro.experiments.yamlio import read_yaml

    return list(read_yaml("fedrepro/papers/aspire/experiments.yaml")["experiments"])


def test_readme_dro_example_expands():
    import re

    import yaml

    from fedrepro.experiments.expansion import expand

    text = open("docs/nn.md").read()                # the README's reference section, moved there (issue #26)
    section = text[text.index("### Distributionally robust and asynchronous runs"):]
    block = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    cells = expand("custom", "my_dro", block["experiments"]["my_dro"])
    assert {c["algorithm"] for c in cells} == {"aspire", "afl"} and len(cells) == 4
    assert all(("tau" in c) == (c["algorithm"] == "aspire") for c in cells)
    assert {c["max_rounds"] for c in cells} == {4500, 300}


def test_per_algorithm_run_settings_are_run_settings_and_fedprox_rho_is_refused():
    from fedrepro.core.params import ConfigError
    from fedrepro.experiments.expansion import expand

    block = {"problem": {"name": "neural", "dataset": "mnist", "m": 10}, "rho": 0.1, "max_rounds": 20,
             "algorithms": {"fedprox_sgd": {"mu": 0.01, "max_rounds": 5}, "fedavg_sgd": {"eval_every": 4, "rho": 0.5}}}
    cells = {c["algorithm"]: c for c in expand("custom", "x", block)}
    prox = cells["fedprox_sgd"]
    assert prox["params"]["mu"] == 0.01 and prox["rho"] == 0.1          # FedProx's mu; rho the participation
    assert prox["max_rounds"] == 5 and "max_rounds" not in prox["params"]
    assert cells["fedavg_sgd"]["eval_every"] == 4 and cells["fedavg_sgd"]["max_rounds"] == 20
    assert cells["fedavg_sgd"]["rho"] == 0.5 and "rho" not in cells["fedavg_sgd"]["params"]
    # FedProx's proximal coefficient under its former name: refused, naming the key and the fix (issue #44)
    old = {**block, "algorithms": {"fedprox_sgd": {"rho": 0.01}}}
    with pytest.raises(ConfigError, match=r"x: algorithms\.fedprox_sgd\.rho: .*participation rate.*write mu: 0\.01"):
        expand("custom", "x", old)


def test_the_malicious_workers_weight_claims_read_the_last_workers_final_weight():
    # Sec. 9.2.2: AFL "could assign higher weights to malicious workers", DRFA-Prox and ASPIRE-EASE "lower":
    # the added worker's final weight against the equal weight 1/N (issue #42)
    import pandas as pd
    rows = []
    for seed, (afl, drfa, asp) in enumerate([(0.8, 0.1, 0.05), (0.7, 0.15, 0.1), (0.9, 0.12, 0.02)]):
        for alg, col, w in (("afl", "lambda_last", afl), ("drfa_prox", "lambda_last", drfa), ("aspire", "pi_last", asp)):
            for rnd, val in ((0, 0.25), (5, w)):
                rows.append({"cell": f"{alg}-{seed}", "algorithm": alg, "seed": seed, "round": rnd, "m": 4, col: val})
    frames = {"table4_fmnist3": pd.DataFrame(rows)}
    higher = _check("t4_afl_weights_malicious_higher")(frames, {})
    assert list(higher.value.values) == pytest.approx([0.55, 0.45, 0.65])          # final weight - 1/4
    lower = _check("t4_drfa_weights_malicious_lower")(frames, {})
    assert list(lower.value.values) == pytest.approx([0.15, 0.1, 0.13])            # 1/4 - final weight
    aspire = _check("t4_aspire_weights_malicious_lower")(frames, {})
    assert list(aspire.value.values) == pytest.approx([0.2, 0.15, 0.23])
    assert _check("t4_afl_weights_malicious_higher")({}, {}) is None
