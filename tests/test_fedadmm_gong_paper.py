"""fedadmm_gong paper layer (spec 003 §6): rounds to target, Table III/IV/V/VI frames, figures and claims,
on synthetic result frames whose answers are known (each claim is shown to hold and to fail)."""
import json

import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import NotTestable, Outcome
from fedrepro.experiments.cells import all_cells
from fedrepro.papers.fedadmm_gong import claims as C
from fedrepro.papers.fedadmm_gong import figures as F
from fedrepro.papers.fedadmm_gong.analysis import (TABLE3_COLUMNS, TARGETS, best_prox, mean_curve, reduction,
                                                   rounds_to, rtt, tidy)

ALG = {"FedADMM": "fedadmm_gong", "FedAvg": "fedavg_sgd", "FedProx": "fedprox_sgd", "SCAFFOLD": "scaffold",
       "FedSGD": "fedsgd"}


def run(experiment, method, acc, *, ds="mnist", m=100, partition="iid", model="mlp1", seed=0, setting=None,
        **params):
    """A tidy result frame of one run whose test accuracy after round r is acc[r] (acc[0]: round 0)."""
    n = len(acc)
    problem = {"name": "neural", "model": model, "dataset": ds, "m": m, "partition": partition}
    df = pd.DataFrame({"round": np.arange(n), "test_accuracy": np.asarray(acc, float)})
    df["experiment"], df["algorithm"], df["seed"] = experiment, ALG[method], seed
    df["cell"] = f"{experiment}-{method}-{ds}-{m}-{partition}-{seed}-{json.dumps(params, sort_keys=True)}-{setting}"
    df["params"], df["problem"] = json.dumps(params), json.dumps(problem)
    df["setting"], df["n_samples"], df["rounds"] = setting, 6000, n - 1
    df["run_local_cpu_time"] = 1.0
    df["local_samples"] = df["round"] * (300 if method == "FedADMM" else 600)
    return df


def ramp(reach_round, T=20, level=None, start=0.05, ds="mnist"):
    """Accuracy that crosses `level` (default: the MLP target of `ds`) exactly at round `reach_round`
    (None: stays below)."""
    level = TARGETS["mlp"][ds] if level is None else level
    r = np.arange(T + 1)
    if reach_round is None:
        return start + (level - 0.05 - start) * r / T
    return np.where(r >= reach_round, level + 0.01 + 0.001 * (r - reach_round), start + (level - start) * 0.9 * r / reach_round)


def test_rounds_to_target_uses_the_seed_mean_curve_and_marks_not_reached():
    t = TARGETS["mlp"]["mnist"]
    a = tidy(pd.concat([run("x", "FedADMM", [0.0, t - 0.1, t + 0.1, t + 0.2], seed=0),
                        run("x", "FedADMM", [0.0, t + 0.2, t - 0.2, t + 0.2], seed=1)]))
    c = mean_curve(a)
    assert list(c["mean"].round(6)) == [0.0, round(t + 0.05, 6), round(t - 0.05, 6), round(t + 0.2, 6)]
    assert rounds_to(c, t) == 1 and rounds_to(c, t + 0.1) == 3 and rounds_to(c, t + 0.3) is None
    r = rtt(a)                                      # the MLP target on MNIST
    assert r["rounds"] == 1 and r["per_seed"] == [2, 1] and r["horizon"] == 3
    assert reduction(10, 19, 20) == pytest.approx(47.368, abs=1e-3) and reduction(None, 5, 20) is None


def test_targets_follow_the_model_and_the_data_size():
    a = tidy(run("x", "FedADMM", [0.1, 0.96, 0.975], model="cnn1"))
    assert rtt(a)["target"] == 0.97 and rtt(a)["rounds"] == 2
    full = run("x", "FedADMM", [0.1, 0.96, 0.975])
    full["n_samples"] = 60000                           # the reduced tier: MLP on the full training set
    assert rtt(tidy(full))["target"] == TARGETS["mlp_full"]["mnist"]
    assert rtt(tidy(run("x", "FedADMM", [0.1, 0.96])))["target"] == TARGETS["mlp"]["mnist"]


def test_best_prox_picks_the_fewest_rounds():
    df = tidy(pd.concat([run("t", "FedProx", ramp(12), rho=0.01), run("t", "FedProx", ramp(7), rho=0.1),
                         run("t", "FedProx", ramp(None), rho=1.0)]))
    best, r = best_prox(df)
    assert best == "FedProx (ρ=0.1)" and r["rounds"] == 7


def _table3(frames_rounds):
    """frames for Table III: {setting: {method: rounds}} -> frames dict."""
    parts, sgd = [], []
    for setting, per in frames_rounds.items():
        for method, r in per.items():
            if method == "FedSGD":
                sgd.append(run("table3_fedsgd", "FedSGD", ramp(r, T=50), setting=setting))
            elif method == "FedProx":
                parts.append(run("table3", "FedProx", ramp(r), setting=setting, rho=0.1))
                parts.append(run("table3", "FedProx", ramp(None), setting=setting, rho=0.01))
            else:
                parts.append(run("table3", method, ramp(r), setting=setting))
    return {"table3": pd.concat(parts, ignore_index=True),
            "table3_fedsgd": pd.concat(sgd, ignore_index=True) if sgd else pd.DataFrame()}


def test_table3_claim_holds_fails_and_is_not_testable_when_nothing_reaches_the_target(tmp_path):
    good = {s: {"FedADMM": 5, "FedAvg": 9, "FedProx": 12, "SCAFFOLD": 10, "FedSGD": 40} for s in TABLE3_COLUMNS}
    frames = _table3(good)
    out = C.table3_fedadmm_fewest(frames, {})
    assert isinstance(out, Outcome) and out.value == 1.0
    bad = dict(good)
    bad["MNIST-100 IID"] = {"FedADMM": 15, "FedAvg": 9, "FedProx": 12, "SCAFFOLD": 10}
    bad["MNIST-1000 IID"] = {"FedADMM": None, "FedAvg": 9, "FedProx": None, "SCAFFOLD": None}
    out = C.table3_fedadmm_fewest(_table3(bad), {})
    assert out.value == pytest.approx(6 / 8) and "MNIST-100 IID" in out.why
    none = {s: {"FedADMM": None, "FedAvg": None, "FedProx": None, "SCAFFOLD": None} for s in TABLE3_COLUMNS}
    none["MNIST-100 IID"] = good["MNIST-100 IID"]
    assert isinstance(C.table3_fedadmm_fewest(_table3(none), {}), NotTestable)
    assert C.table3_local_computation(frames, {}).value == pytest.approx(0.5)
    red = C.table3_mean_reduction(frames, {})
    assert red.value == pytest.approx(100 * (9 - 5) / 9)
    # the rendered table: rounds, speedups vs FedSGD, chosen rho, reduction row, paper rows
    F.table3(frames, {}, tmp_path / "table3")
    md = (tmp_path / "table3.md").read_text()
    assert "| FedADMM | 5 (8.0×)" in md and "[ρ=0.1]" in md and "44.4% vs FedAvg" in md and "paper: FedADMM" in md
    assert "[reduced scale: MLP" in md


def test_scaling_figures_and_reduction_claim(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                       # no paper fragment here: the default layout
    parts = []
    for ds in ("fashion_mnist", "cifar10"):
        for m, (admm, avg) in {100: (8, 10), 200: (6, 10), 1000: (5, 15)}.items():
            for part in ("iid", "label_shards"):
                parts += [run("scaling", "FedADMM", ramp(admm, ds=ds), ds=ds, m=m,
                              partition=part, model="mlp1" if ds != "cifar10" else "mlp2"),
                          run("scaling", "FedAvg", ramp(avg, ds=ds), ds=ds, m=m,
                              partition=part, model="mlp1" if ds != "cifar10" else "mlp2")]
                for meth in ("FedProx", "SCAFFOLD"):
                    parts.append(run("scaling", meth, ramp(None, ds=ds), ds=ds,
                                     m=m, partition=part, rho=0.1, model="mlp1" if ds != "cifar10" else "mlp2"))
    frames = {"scaling": pd.concat(parts, ignore_index=True)}
    out = C.reduction_grows_with_m(frames, {})
    assert out.value == pytest.approx(100 * (15 - 5) / 15 - 100 * (10 - 8) / 10)
    assert C.fig5_fedadmm_best(frames, {}).value > 0
    for fig in ("fig3", "fig4", "fig5"):
        getattr(F, fig)(frames, {}, tmp_path / fig)
        assert (tmp_path / f"{fig}.png").stat().st_size > 10_000
    # reversed populations: the reduction shrinks with m -> a negative value (the claim fails)
    flipped = frames["scaling"].copy()
    flipped["problem"] = flipped["problem"].str.replace('"m": 1000', '"m": 999').str.replace('"m": 100,', '"m": 1000,') \
        .str.replace('"m": 999', '"m": 100')
    assert C.reduction_grows_with_m({"scaling": flipped}, {}).value < 0


def test_table4_monotone_claim_and_render(tmp_path):
    parts = []
    for ds, model in (("mnist", "mlp1"), ("cifar10", "mlp2")):
        for part in ("iid", "label_shards"):
            for E, r in zip((1, 5, 10), (14, 9, 6)):
                parts.append(run("table4", "FedADMM", ramp(r, ds=ds), ds=ds,
                                 partition=part, model=model, E=E, B=50))
    frames = {"table4": pd.concat(parts, ignore_index=True)}
    assert C.table4_monotone(frames, {}).value == 1.0
    F.table4(frames, {}, tmp_path / "table4")
    assert "27 / 10 / 6" in (tmp_path / "table4.md").read_text()
    swapped = frames["table4"].copy()
    swapped.loc[swapped["params"].str.contains('"E": 10') & swapped["problem"].str.contains("cifar10"), "test_accuracy"] = 0.1
    assert C.table4_monotone({"table4": swapped}, {}).value == 0.5


def test_option_and_rho_claims_hold_and_fail():
    parts = []
    for ds in ("mnist", "cifar10"):
        for part in ("iid", "label_shards"):
            for eta in (0.5, 1.0):
                parts.append(run("fig8", "FedADMM", np.full(21, 0.8), ds=ds, partition=part, local_init="local", eta=eta))
                parts.append(run("fig8", "FedADMM", np.full(21, 0.7 if ds == "mnist" else 0.9), ds=ds, partition=part,
                                 local_init="global", eta=eta))
    assert C.option1_ge_option2({"fig8": pd.concat(parts)}, {}).value == 0.5
    fig9 = pd.concat([run("fig9", "FedADMM", np.full(21, a), ds=ds, partition="label_shards", rho=0.01, rho_2=r2,
                          rho_switch=10)
                      for ds in ("mnist", "cifar10") for r2, a in ((0.01, 0.5), (0.1, 0.6), (1.0, 0.4))])
    assert C.rho_increase_helps({"fig9": fig9}, {}).value == pytest.approx(10.0)


def test_table6_is_computed_from_the_full_partition(tmp_path, monkeypatch):
    from fedrepro.data.dataset import Dataset

    y = np.repeat(np.arange(10), 6000)
    Dataset("fashion_mnist", np.zeros((60000, 1), np.float32), y, np.array(["train"] * 60000)).save(
        tmp_path / "fashion_mnist.npz")
    monkeypatch.setenv("FEDREPRO_PROCESSED", str(tmp_path))
    frames = {"fig10": run("fig10", "FedADMM", [0.1, 0.2], ds="fashion_mnist", m=200,
                           partition={"method": "imbalanced_shards", "n_shards": 10000})}
    t = F.table6_frame(frames)
    assert t["stdev"].iloc[0] == pytest.approx(171.03, abs=0.005) and t["mean"].iloc[0] == 300
    assert C.table6_fmnist_std(frames, {}).value == pytest.approx(171.03, abs=0.005)


def test_the_paper_fragment_expands_and_every_claim_names_a_check():
    from fedrepro.claims import validate_claims
    from fedrepro.experiments.workflow_plan import load_claims

    for scale in ("quick", "paper"):
        cells = all_cells({"papers": ["fedadmm_gong"], "scale": scale, "seed": 0})
        exps = {e for (_, e) in cells}
        assert {"table3", "table3_fedsgd", "scaling", "fig10"} <= exps
    quick = all_cells({"papers": ["fedadmm_gong"], "scale": "quick", "seed": 0})
    paper = all_cells({"papers": ["fedadmm_gong"], "scale": "paper", "seed": 0})
    q3 = quick[("fedadmm_gong", "table3")][0]
    p3 = paper[("fedadmm_gong", "table3")][0]
    assert q3["problem"]["train_size"]["mnist"] == 6000 and q3["max_rounds"] == 20
    assert p3["problem"]["train_size"] is None and p3["max_rounds"] == 100
    assert {c["params"].get("eta_switch") for c in paper[("fedadmm_gong", "fig6_schedule")]} == {60}
    reduced = all_cells({"papers": ["fedadmm_gong"], "scale": "reduced", "seed": 0})
    r3 = reduced[("fedadmm_gong", "table3")]
    assert {c["problem"]["train_size"] for c in r3} == {None} and {c["max_rounds"] for c in r3} == {100}
    assert {c["problem"]["model"]["mnist"] for c in r3} == {"mlp1"} and len({c["columns"]["setting"] for c in r3}) == 8
    assert {c["params"].get("rho_switch") for c in reduced[("fedadmm_gong", "fig9")]} == {60}
    # papers without a reduced tier run their quick cells at scale=reduced
    other = {"papers": ["fedepm"], "seed": 0}
    assert [c["cell"] for v in all_cells({**other, "scale": "reduced"}).values() for c in v] == \
        [c["cell"] for v in all_cells({**other, "scale": "quick"}).values() for c in v]
    claims = load_claims("fedadmm_gong")
    validate_claims(claims, "fedadmm_gong")
    assert {c["check"] for c in claims} <= set(C.CHECKS)
    assert len(claims) >= 20


def test_every_figure_and_table_renders_from_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    acc = ramp(8)
    mk = lambda exp, method, **kw: run(exp, method, acc, **kw)
    frames = {
        "fig6_constant": pd.concat([mk("fig6_constant", "FedADMM", ds=d, partition=p, eta=e, setting=s)
                                    for d, p, s in (("mnist", "iid", "MNIST IID"), ("mnist", "label_shards", "MNIST non-IID"))
                                    for e in (0.5, 1.0, 1.5)]),
        "fig6_schedule": pd.concat([mk("fig6_schedule", "FedADMM", ds="mnist", partition="iid", eta=e, eta_2=0.5,
                                       eta_switch=10, setting="MNIST IID") for e in (1.0, 1.5)]),
        "table4": pd.concat([mk("table4", "FedADMM", partition=p, E=E) for p in ("iid", "label_shards") for E in (1, 5, 10)]),
        "fig8": pd.concat([mk("fig8", "FedADMM", partition=p, local_init=i, eta=e) for p in ("iid", "label_shards")
                           for i in ("local", "global") for e in (0.5, 1.0)]),
        "fig8_sequential": mk("fig8_sequential", "FedADMM", partition="iid", local_init="sequential_shared"),
        "fig9": pd.concat([mk("fig9", "FedADMM", partition="label_shards", rho=0.01, rho_2=r, rho_switch=10)
                           for r in (0.01, 0.1, 1.0)]),
        "table5": pd.concat([mk("table5", meth, m=m, partition=p, **({"rho": r} if meth == "FedProx" else {}))
                             for m in (200, 500) for p in ("iid", "label_shards")
                             for meth, r in (("FedADMM", None), ("FedProx", 0.01), ("FedProx", 0.1), ("FedProx", 1.0))]),
        "fig10": pd.concat([mk("fig10", meth, ds="fashion_mnist", m=200, rho=0.1)
                            for meth in ("FedADMM", "FedAvg", "FedProx", "SCAFFOLD")]),
    }
    for name, spec in {**F.FIGURES, **F.TABLES}.items():
        if name in ("fig3", "fig4", "fig5", "table3", "table6"):
            continue                                   # covered above (need their own frames / data)
        spec.render({e: frames[e] for e in spec.experiments if e in frames}, {}, tmp_path / name)
        suffix = ".png" if spec.kind == "figure" else ".md"
        assert (tmp_path / f"{name}{suffix}").stat().st_size > 200, name
    assert "0.01 / 0.1" not in (tmp_path / "table5.md").read_text()       # paper column is per method
    assert "| MNIST | FedADMM (0.01) | 8 | 8 | 8 | 8 | 3 / 29 / 5 / 14 |" in (tmp_path / "table5.md").read_text()


def test_paper_round_count_claims_compare_with_the_quoted_tables():
    t4 = pd.concat([run("table4", "FedADMM", ramp(r), partition="iid", E=E) for E, r in ((1, 27), (5, 10), (10, 6))]
                   + [run("table4", "FedADMM", ramp(None), partition="label_shards", E=E) for E in (1, 5, 10)])
    out = C.table4_rounds_paper({"table4": t4}, {})
    assert out.value == pytest.approx(1.0) and "MNIST IID E=1" in out.why       # 27 > T = 20: not reached
    t5 = pd.concat([run("table5", "FedADMM", ramp(2 * r), m=m, partition=p)
                    for (m, p), r in zip(((200, "iid"), (200, "label_shards"), (500, "iid"), (500, "label_shards")),
                                         (3, 29, 5, 14)) if 2 * r <= 20])
    assert C.table5_fedadmm_rounds_paper({"table5": t5}, {}).value == pytest.approx(2.0)


def test_swept_learning_rates_are_tuned_per_setting(tmp_path):
    from fedrepro.papers.fedadmm_gong.analysis import runs_of

    frames = _table3({s: {"FedADMM": 5, "FedAvg": 9, "FedProx": 12, "SCAFFOLD": 10, "FedSGD": 40}
                      for s in TABLE3_COLUMNS[:4]})
    extra = pd.concat([run("table3", "FedAvg", ramp(4), setting=s, lr=0.2) for s in TABLE3_COLUMNS[:4]]
                      + [run("table3", "FedAvg", ramp(None), setting=s, lr=0.5) for s in TABLE3_COLUMNS[:4]])
    frames["table3"] = pd.concat([frames["table3"], extra], ignore_index=True)
    df = tidy(frames["table3"])
    picked = runs_of(df[df["setting"] == TABLE3_COLUMNS[0]], "FedAvg")
    assert set(picked["lr"]) == {0.2} and rtt(picked)["rounds"] == 4
    out = C.table3_fedadmm_fewest(frames, {})
    assert out.value == 0.0 and "best baseline 4" in out.why            # the tuned FedAvg now wins
    F.table3(frames, {}, tmp_path / "t3")
    assert "| FedAvg | 4 (10.0×) [lr=0.2]" in (tmp_path / "t3.md").read_text()


def test_runtime_requests_follow_the_work_of_a_cell():
    from fedrepro.experiments.workflow_plan import cell_runtime_min
    from fedrepro.nn import build_model

    assert build_model("cnn1").forward_flops() == 24_546_304            # spec §5: 12.27 M MAC
    assert build_model("mlp1").forward_flops() == 2 * (784 * 200 + 200 * 200 + 200 * 10)
    paper = all_cells({"papers": ["fedadmm_gong"], "scale": "paper", "seed": 0})
    cell = next(c for c in paper[("fedadmm_gong", "table3")] if c["algorithm"] == "fedadmm_gong"
                and c["columns"]["setting"] == "MNIST-100 IID")
    minutes = cell_runtime_min(cell, "paper")
    assert 40 <= minutes <= 24 * 60            # measured: 23.8 CPU-s per round, 100 rounds = 40 min
    longer = dict(cell, max_rounds=200)
    assert cell_runtime_min(longer, "paper") > 1.9 * (minutes - 5)
    quick = all_cells({"papers": ["fedadmm_gong"], "scale": "quick", "seed": 0})
    assert {cell_runtime_min(c, "quick") for v in quick.values() for c in v} == {10}


def test_titles_say_which_fedadmm_the_curves_show():
    from fedrepro.papers.fedadmm_gong.analysis import scale_note

    seq = tidy(pd.concat([run("x", "FedADMM", [0.1, 0.5], local_init="sequential_shared"),
                          run("x", "FedAvg", [0.1, 0.5])]))
    assert "authors' early code" in scale_note(seq)
    mixed = tidy(pd.concat([run("x", "FedADMM", [0.1, 0.5], local_init="sequential_shared"),
                            run("x", "FedADMM", [0.1, 0.5], local_init="local")]))
    assert "early code" not in scale_note(mixed)
    quick = all_cells({"papers": ["fedadmm_gong"], "scale": "quick", "seed": 0})
    inits = {(e, c["params"].get("local_init")) for (_, e), v in quick.items() for c in v if c["algorithm"] == "fedadmm_gong"}
    assert {i for e, i in inits if e == "fig8"} == {"local", "global"}
    assert {i for e, i in inits if e not in ("fig8",)} == {"sequential_shared"}


def test_difference_claims_report_the_smallest_difference_and_can_fail():
    fig6 = pd.concat([run("fig6_constant", "FedADMM", np.full(21, a), ds="mnist", partition="label_shards",
                          eta=eta, setting=s)
                      for s, a15 in (("MNIST non-IID", 0.5), ("CIFAR-10 non-IID", 0.7))
                      for eta, a in ((1.0, 0.6), (1.5, a15))])
    out = C.eta15_worse_noniid({"fig6_constant": fig6}, {})
    assert out.value == pytest.approx(-10.0) and "η=1 minus η=1.5 +10.0 pp" in out.why
    t4 = pd.concat([run("table4", "FedADMM", np.full(21, a), partition=p, E=E)
                    for p, a10 in (("iid", 0.8), ("label_shards", 0.3)) for E, a in ((1, 0.4), (10, a10))])
    assert C.fig7_final_grows_with_e({"table4": t4}, {}).value == pytest.approx(-10.0)
