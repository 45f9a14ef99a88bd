"""aspire analysis, claims and figures on hand-made result frames: each check can hold and can fail."""
import json

import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import NotTestable, Outcome
from fedrepro.papers.aspire import analysis, claims
from fedrepro.papers.aspire import figures as figs

SEEDS = (1, 2, 3)


def _runs(exp, spec, m=3, rounds=(0, 10), extra=None):
    """A trace frame: spec = {algorithm: (acc_w, loss_w, std[, params])} per seed (final values; round 0
    gets a worse start)."""
    rows = []
    for alg, vals in spec.items():
        params = vals[3] if len(vals) > 3 else {}
        for s in SEEDS:
            cell = f"{alg}-{json.dumps(params, sort_keys=True)}-{s}"
            for r in rounds:
                last = r == rounds[-1]
                row = {"experiment": exp, "cell": cell, "algorithm": alg, "seed": s, "round": r, "m": m,
                       "params": json.dumps(params), "problem": json.dumps({"model": "quick"}),
                       "acc_w": vals[0] + 0.1 * s if last else 0.0, "loss_w": vals[1] if last else 2.0,
                       "acc_std": vals[2] if last else 30.0, "virtual_time": float(r)}
                row.update((extra or {}).get(alg, {}) if last else {})
                rows.append(row)
    return pd.DataFrame(rows)


T3 = {"individual": (10, np.nan, 20), "mix_even": (50, 1.0, 8), "fedavg_steps": (50.2, 1.0, 8.1),
      "afl": (55, 0.9, 5), "drfa_prox": (56, 0.88, 4.5), "aspire": (57, 0.85, 3), "aspire_per": (56.8, 0.852, 3.2)}


def _t3(**over):
    spec = {**T3, **over}
    return {"table3_scma": _runs("table3_scma", spec, m=15)}


def _verdict(out):
    return bool(out.value if isinstance(out, Outcome) else out)


def test_table3_frame_means_and_individual_best():
    t = analysis.table3_frame(_t3())
    row = t.set_index("algorithm").loc["aspire"]
    assert row["acc_w"] == pytest.approx(57.2) and row["acc_w_std"] == pytest.approx(np.std([57.1, 57.2, 57.3]))
    assert row["paper_acc_w"] == 56.31 and row["seeds"] == 3
    assert t.set_index("algorithm").loc["individual", "acc_w"] == pytest.approx(10.2)


@pytest.mark.parametrize("check, breaking", [
    ("t3_aspire_best", {"aspire": (40, 0.85, 3)}),
    ("t3_aspire_lowest_std", {"aspire": (57, 0.85, 6)}),
    ("t3_dro_beats_erm", {"afl": (45, 0.9, 5)}),
    ("t3_fedavg_mix_even", {"fedavg_steps": (60, 1.0, 8)}),
    ("t3_drfa_ge_afl", {"drfa_prox": (50, 0.88, 4.5)}),
    ("t3_ind_worst", {"individual": (52, np.nan, 20)}),
    ("t3_per_within_noise", {"aspire_per": (50, 0.86, 3.2)}),
])
def test_table3_checks_hold_and_fail(check, breaking):
    fn = claims.CHECKS[check]
    assert _verdict(fn(_t3(), {})) is True
    assert not _verdict(fn(_t3(**breaking), {}))


def test_table4_checks():
    def t4(rates):
        spec = {a: (50, 1.0, 5) for a in rates}
        extra = {a: {"attack_success": r} for a, r in rates.items()}
        return {"table4_scma": _runs("table4_scma", spec, m=16, extra=extra)}
    good = t4({"mix_even": 40, "fedavg_steps": 41, "afl": 70, "drfa_prox": 25, "aspire": 10})
    bad = t4({"mix_even": 40, "fedavg_steps": 41, "afl": 30, "drfa_prox": 45, "aspire": 50})
    for name in ("t4_aspire_lowest", "t4_afl_highest", "t4_drfa_below_erm"):
        assert _verdict(claims.CHECKS[name](good, {})) is True
        assert _verdict(claims.CHECKS[name](bad, {})) is False


def _fig3(values, m=3):
    spec = {}
    frames = []
    for gamma, (acc, loss) in values.items():
        spec = {"aspire": (acc, loss, 5, {"Gamma": gamma})}
        frames.append(_runs("fig3_fmnist3", spec, m=m))
    return pd.concat(frames, ignore_index=True)


def test_fig3_checks_hold_and_fail():
    grows = _fig3({0.0: (40, 1.0), 1.0: (45, 0.9), 2.0: (50, 0.8), 3.0: (50, 0.8)})
    drops = _fig3({0.0: (40, 1.0), 1.0: (50, 0.8), 2.0: (30, 1.2), 3.0: (30, 1.21)})
    assert _verdict(claims.f3_robustness_grows({"fig3_fmnist3": grows}, {})) is True
    assert _verdict(claims.f3_robustness_grows({"fig3_fmnist3": drops}, {})) is False
    assert _verdict(claims.f3_plateau({"fig3_fmnist3": grows}, {})) is True
    assert _verdict(claims.f3_plateau({"fig3_fmnist3": drops}, {})) is False
    mix = _runs("table3_fmnist3", {"mix_even": (40, 1.0, 5)})
    assert _verdict(claims.f3_gamma0_is_mix_even({"fig3_fmnist3": grows, "table3_fmnist3": mix}, {})) is True
    other = _runs("table3_fmnist3", {"mix_even": (40.5, 1.0, 5)})
    assert _verdict(claims.f3_gamma0_is_mix_even({"fig3_fmnist3": grows, "table3_fmnist3": other}, {})) is False


def _fig4(final_losses, planes=None):
    rows = []
    for alg, (hit_time, final) in final_losses.items():
        for t in range(0, 101, 10):
            loss = 2.0 if t < hit_time else final
            rows.append({"experiment": "fig4_scma", "cell": alg, "algorithm": alg, "seed": 1, "round": t, "m": 15,
                         "params": "{}", "problem": "{}", "acc_w": 0.0, "loss_w": loss, "acc_std": 1.0,
                         "virtual_time": float(t), "n_planes": (planes or {}).get(alg, 1)})
    return {"fig4_scma": pd.DataFrame(rows)}


def test_fig4_checks_and_the_no_target_guard():
    good = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                  "drfa_prox": (70, 1.1)}, planes={"aspire": 3, "aspire_cp": 9})
    slow = _fig4({"aspire": (80, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 1.2),
                  "drfa_prox": (70, 1.1)}, planes={"aspire": 9, "aspire_cp": 9})
    for name in ("f4_aspire_fastest", "f4_async_gain", "f4_ease_before_cp", "f5_ease_fewer_planes"):
        assert _verdict(claims.CHECKS[name](good, {})) is True, name
        assert _verdict(claims.CHECKS[name](slow, {})) is False, name
    diverged = _fig4({"aspire": (20, 1.0), "aspire_cp": (40, 1.0), "aspire_sync": (60, 1.0), "afl": (50, 3.0),
                      "drfa_prox": (70, 1.1)})
    assert isinstance(claims.f4_aspire_fastest(diverged, {}), NotTestable)


def test_fig2_check():
    spec = {"H_max": 1.0, "c0": 0.0, "m0": 1.0, "sigma": 0.1, "schedule": [{"worker": 2, "start": 10.0, "end": 40.0,
                                                                            "factor": 4.0}]}
    t = np.arange(0, 50, 0.5)
    S = np.where((t >= 15) & (t < 41), 1, 3)
    df = pd.DataFrame({"virtual_time": t, "active_workers": S, "m": 3, "delays": json.dumps(spec)})
    assert _verdict(claims.f2_adp_adapts({"fig2": df}, {})) is True
    assert _verdict(claims.f2_adp_adapts({"fig2": df.assign(active_workers=3)}, {})) is False


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
    from fedrepro.experiments.cells import all_cells
    from fedrepro.experiments.workflow_plan import cell_memory_mb, cell_runtime_min, worker_cell_cost

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
    from fedrepro.experiments.workflow_plan import DataPlan, paper_outputs, skipped_markdown

    cells = {("aspire", e): [] for e in ("table3_scma", "table3_shl")}
    skipped = {("aspire", "table3_shl"): ["shl"]}
    outputs = paper_outputs({"papers": ["aspire"]}, cells | {("aspire", e): [] for e in _all_aspire_experiments()},
                            skipped, ".")
    text = skipped_markdown(skipped, outputs, DataPlan({"data": {"download": False}}))
    assert "| aspire/table3 | shl |" in text and "| aspire/table5 | shl |" in text


def _all_aspire_experiments():
    from fedrepro.experiments.cells import read_yaml

    return list(read_yaml("workflow/papers/aspire.yaml")["experiments"])


def test_readme_dro_example_expands():
    import re

    import yaml

    from fedrepro.experiments.cells import expand

    text = open("README.md").read()
    section = text[text.index("### Distributionally robust and asynchronous runs"):]
    block = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    cells = expand("custom", "my_dro", block["experiments"]["my_dro"])
    assert {c["algorithm"] for c in cells} == {"aspire", "afl"} and len(cells) == 4
    assert all(("tau" in c) == (c["algorithm"] == "aspire") for c in cells)
    assert {c["max_rounds"] for c in cells} == {4500, 300}


def test_per_algorithm_run_settings_never_take_an_algorithms_own_parameter():
    from fedrepro.experiments.cells import expand

    block = {"problem": {"name": "neural", "dataset": "mnist", "m": 10}, "rho": 0.1, "max_rounds": 20,
             "algorithms": {"fedprox_sgd": {"rho": 0.01, "max_rounds": 5}, "fedavg_sgd": {"eval_every": 4}}}
    cells = {c["algorithm"]: c for c in expand("custom", "x", block)}
    prox = cells["fedprox_sgd"]
    assert prox["params"]["rho"] == 0.01 and prox["rho"] == 0.1          # FedProx's rho, not participation
    assert prox["max_rounds"] == 5 and "max_rounds" not in prox["params"]
    assert cells["fedavg_sgd"]["eval_every"] == 4 and cells["fedavg_sgd"]["max_rounds"] == 20
