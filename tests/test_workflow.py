"""The Snakemake workflow parses, validates the config and lists the whole DAG (dry run)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")
pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed in this environment")


def dry_run(*args, env=None):
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k != "FEDREPRO_OFFLINE"}  # no longer read
    return subprocess.run([SNAKEMAKE, "-n", "-j", "1", "--quiet", "rules", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow                          # whole-DAG dry run; the no-traceback test below builds it too
def test_dry_run_lists_the_default_dag():
    res = dry_run("--forceall")            # the whole DAG, whatever results/ already holds
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    for rule in ("run_cell", "aggregate", "provenance", "skipped"):
        assert rule in out


def test_bad_config_value_stops_before_any_job():
    res = dry_run("--config", "scale=huge")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "scale" in out and "huge" in out and "quick, verify, reduced, paper" in out


@pytest.mark.slow                          # two dry runs; the fast unit test below covers the strict rule
def test_strict_with_missing_dataset_is_an_error(tmp_path):
    # no mirror, no cache, no network: experiments needing data are skipped (default) ...
    env = {"FEDREPRO_DATA_MIRROR": str(tmp_path)}
    ok = dry_run("--config", "data={cache: %s}" % (tmp_path / "cache"), env=env)
    assert ok.returncode == 0, ok.stderr[-3000:]
    # ... or refused with strict=true, naming dataset and mirror variable
    res = dry_run("--config", "strict=true", "data={cache: %s}" % (tmp_path / "cache"), env=env)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "strict=true" in out and "FEDREPRO_DATA_MIRROR" in out


def test_dry_run_prints_no_traceback_and_no_warning(tmp_path):
    # regression: the experiment wildcard used to let results/<paper>/claims.parquet match rule
    # aggregate (one InputFunctionException traceback per paper), and the draft-07 config schema
    # made snakemake.utils.validate warn; a clean DAG build prints neither
    env = {"FEDREPRO_DATA_MIRROR": str(tmp_path)}
    res = dry_run("--forceall", "--config", "data={cache: %s}" % (tmp_path / "cache"), env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert "claims" in out and "aggregate" in out          # the DAG that used to trigger the traceback
    noisy = [line for line in out.splitlines()
             if any(word in line.lower() for word in ("traceback", "exception", "warning", "no validator"))]
    assert noisy == [], "\n".join(noisy)


def test_data_plan_never_touches_the_network(tmp_path, monkeypatch):
    """Availability comes from cache/mirror only; data.download decides the rest (no probe)."""
    import socket

    from fedrepro.data.plan import DataPlan, skipped_experiments
    from fedrepro.experiments.report_markdown import skipped_markdown

    def refuse(*a, **k):
        raise AssertionError("DataPlan opened a network connection while the DAG is built")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("FEDREPRO_DATA_MIRROR", str(tmp_path / "empty_mirror"))
    data = {"cache": str(tmp_path / "cache"), "processed": str(tmp_path / "processed")}
    from fedrepro.experiments.build_plan import experiment_datasets

    cells = experiment_datasets({("fedadmm_zhou", "fig5_rls"): [{"datasets": ["real_sim"]}]})
    off = DataPlan({"data": data})
    assert off.status("real_sim") == "missing"
    skipped = skipped_experiments(cells, off, strict=False)
    assert skipped == {("fedadmm_zhou", "fig5_rls"): ["real_sim"]}
    assert "download: true" in skipped_markdown(skipped, {}, off) and off.urls("real_sim")[0] in \
        skipped_markdown(skipped, {}, off)
    on = DataPlan({"data": {**data, "download": True}})
    assert on.status("real_sim") == "download"
    assert skipped_experiments(cells, on, strict=True) == {}


@pytest.mark.slow                          # two dry runs; test_data_plan_never_touches_the_network is the fast one
def test_download_flag_adds_the_fetch_jobs(tmp_path):
    env = {"FEDREPRO_DATA_MIRROR": str(tmp_path)}
    cache = "cache: %s" % (tmp_path / "cache")
    off = dry_run("--forceall", "--config", "data={%s}" % cache, env=env)
    on = dry_run("--forceall", "--config", "data={%s, download: true}" % cache, env=env)
    assert off.returncode == 0 and on.returncode == 0, (off.stderr + on.stderr)[-3000:]

    def jobs(res, rule):
        return next((int(line.split()[-1]) for line in res.stdout.splitlines() if line.split()[:1] == [rule]), 0)

    assert jobs(on, "fetch") > jobs(off, "fetch") and jobs(on, "total") > jobs(off, "total")


def test_strict_skips_or_refuses_missing_datasets(tmp_path):
    """skipped_experiments (what `strict` drives): missing datasets skip their experiments by
    default, and with strict=True are an error naming the experiment, dataset, URL and the fixes."""
    from fedrepro.core.params import ConfigError
    from fedrepro.data.plan import skipped_experiments

    class Plan:                                    # the DataPlan interface skipped_experiments reads
        cache = tmp_path / "cache"

        def status(self, key):
            return "missing" if key == "cifar10" else "local"

        def urls(self, key):
            return [f"https://example.invalid/{key}"]

    from fedrepro.experiments.build_plan import experiment_datasets

    cells = experiment_datasets({("p", "needs_data"): [{"datasets": ["cifar10", "adult"]}, {"datasets": ["cifar10"]}],
                                 ("p", "local"): [{"datasets": ["adult"]}], ("p", "synthetic"): [{"datasets": []}]})
    assert cells[("p", "needs_data")] == ["adult", "cifar10"] and cells[("p", "synthetic")] == []
    assert skipped_experiments(cells, Plan(), strict=False) == {("p", "needs_data"): ["cifar10"]}
    with pytest.raises(ConfigError) as err:
        skipped_experiments(cells, Plan(), strict=True)
    msg = str(err.value)
    for part in ("strict=true", "p/needs_data needs cifar10", "https://example.invalid/cifar10",
                 "FEDREPRO_DATA_MIRROR", str(tmp_path / "cache")):
        assert part in msg
    assert "local" not in msg.replace("p/needs_data", "")


def test_convex_runtime_requests_follow_the_work():
    """Paper-scale convex cells request a runtime from their data size, rounds and local steps
    (#14 finding 10), not a flat 24 h."""
    from fedrepro.experiments.expansion import all_cells
    from fedrepro.experiments.resources import cell_runtime_min, convex_data_bytes

    assert convex_data_bytes({"name": "linreg_synthetic", "m": 4000, "n": 1000}) == 4000 * 100 * 1001 * 8
    assert convex_data_bytes({"name": "logreg", "dataset": "real_sim"}) == 3709083 * 12      # CSR: nnz x 12 B
    assert convex_data_bytes({"name": "adult_logreg"}) == 45222 * 14 * 8
    cell = {"algorithm": "fedavg", "problem": {"name": "linreg_synthetic", "m": 1000, "n": 1000},
            "k0": 10, "rho": 0.5, "max_rounds": 200}
    base = cell_runtime_min(cell, "paper")
    assert 30 < base < 24 * 60
    assert cell_runtime_min(dict(cell, max_rounds=400), "paper") > 1.9 * (base - 10)
    assert cell_runtime_min(dict(cell, k0=20), "paper") > cell_runtime_min(cell, "paper")
    assert cell_runtime_min(dict(cell, problem={"name": "adult_logreg", "m": 50}), "paper") < base
    assert cell_runtime_min(dict(cell, max_rounds=2), "quick") == 30
    paper = all_cells({"papers": ["fedepm"], "scale": "paper", "seed": 0})
    assert max(cell_runtime_min(c, "paper") for v in paper.values() for c in v) < 60     # Adult: small


def test_kernel_threads_go_to_convex_jobs_only():
    from fedrepro.experiments.resources import cell_threads

    assert cell_threads({"problem": {"name": "linreg_synthetic"}}, 2) == 2
    assert cell_threads({"problem": {"name": "logreg", "dataset": "qsar"}}, 3) == 3
    assert cell_threads({"problem": {"name": "neural", "model": "cnn1"}}, 2) == 1
    assert cell_threads({"problem": {"name": "worker_neural"}}, 4) == 1


def test_a_job_runs_with_its_declared_threads(tmp_path):
    """config kernel_threads -> the rule's threads -> NUMBA_NUM_THREADS in the job -> the kernels;
    Snakemake caps a job's threads at --cores (-j 1: one thread), so nothing is oversubscribed."""
    import pandas as pd
    import yaml

    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({
        "papers": [], "kernel_threads": {"quick": 2},
        "experiments": {"tiny": {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
                                 "algorithms": {"fedadmm": {}}, "seeds": 1, "max_rounds": 3, "k0": 2, "rho": 0.5,
                                 "stop": {"rule": "none"}}}}))
    seen = {}
    for cores in (2, 1):
        work = tmp_path / f"j{cores}"
        res = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(work), "--configfile", str(config),
                              "-j", str(cores), "results/custom/tiny.parquet"],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        seen[cores] = set(pd.read_parquet(work / "results/custom/tiny.parquet")["kernel_threads"])
    assert seen == {2: {2}, 1: {1}}


def test_timing_pass_repeats_every_cell_interleaved(tmp_path):
    """timing_repeats: R -> results/custom/<id>.timing.parquet with R rows per cell, same rounds as the
    experiment's results, the algorithms of a setting rotated from one repetition to the next."""
    import pandas as pd
    import yaml

    config = tmp_path / "timed.yaml"
    config.write_text(yaml.safe_dump({
        "papers": [],
        "experiments": {"timed": {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
                                  "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}}, "seeds": 2,
                                  "max_rounds": 4, "k0": 2, "rho": 0.5, "stop": {"rule": "none"},
                                  "scales": {"quick": {"timing_repeats": 3}}}}}))
    res = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "w"), "--configfile",
                          str(config), "-j", "2", "results/custom/timed.timing.parquet"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    timing = pd.read_parquet(tmp_path / "w/results/custom/timed.timing.parquet")
    summary = pd.read_parquet(tmp_path / "w/results/custom/timed.summary.parquet").set_index("cell")
    assert len(timing) == 3 * len(summary) == 12
    assert sorted(timing["repeat"].unique()) == [0, 1, 2]
    assert (timing.groupby("cell").size() == 3).all()
    assert (timing["rounds"].to_numpy() == summary.loc[timing["cell"], "rounds"].to_numpy()).all()
    assert (timing["run_cpu_time"] > 0).all()
    first = timing[timing["position"] == 0].sort_values("repeat")["algorithm"].tolist()
    assert first[0] != first[1]                      # the first method of a setting rotates


def test_a_timing_pass_after_more_seeds_times_only_the_new_cells(tmp_path):
    """A verify build's second look adds seeds: its timing pass reuses the repetitions the first pass of the
    same commit measured (identical rows) and times only the new cells; another commit re-times everything."""
    import os

    import pandas as pd
    import yaml

    def build(seeds, commit):
        config = tmp_path / f"timed{seeds}.yaml"
        config.write_text(yaml.safe_dump({
            "papers": [],
            "experiments": {"timed": {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
                                      "algorithms": {"fedadmm": {}}, "seeds": seeds, "max_rounds": 4, "k0": 2,
                                      "rho": 0.5, "stop": {"rule": "none"},
                                      "scales": {"quick": {"timing_repeats": 2}}}}}))
        res = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "w"), "--configfile",
                              str(config), "-j", "1", "results/custom/timed.timing.parquet"],
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "FEDREPRO_GIT_COMMIT": commit})
        assert res.returncode == 0, res.stderr[-3000:]
        log = (tmp_path / "w/logs/timing/custom/timed.log").read_text()
        return pd.read_parquet(tmp_path / "w/results/custom/timed.timing.parquet"), log

    first, _ = build(2, "a" * 40)
    second, log = build(3, "a" * 40)
    assert len(first) == 4 and len(second) == 6
    assert "repetition 1/2: 1 runs timed, 2 reused" in log and "repetition 2/2: 1 runs timed, 2 reused" in log
    key = ["cell", "repeat"]
    kept = second.merge(first, on=key, suffixes=("", "_first"))
    assert len(kept) == 4 and (kept["run_cpu_time"] == kept["run_cpu_time_first"]).all()
    third, log = build(4, "b" * 40)                  # another commit: nothing reused
    assert len(third) == 8 and "0 reused" in log and "repetition 1/2: 4 runs timed" in log


def test_timing_order_rotates_the_methods_of_a_setting():
    from fedrepro.experiments.build_plan import timing_order

    cells = [{"cell": f"{a}{i}", "algorithm": a, "shared": {"k0": k}, "instance": i}
             for a in "ab" for k in (1, 2) for i in (0, 1)]
    for r in range(3):
        order = timing_order(cells, r)
        assert sorted(c["cell"] for c in order) == sorted(c["cell"] for c in cells)
        for j in range(0, len(order), 2):                   # a setting's two methods back to back
            assert order[j]["shared"] == order[j + 1]["shared"] and order[j]["instance"] == order[j + 1]["instance"]
    assert timing_order(cells, 0)[0]["algorithm"] != timing_order(cells, 1)[0]["algorithm"]
    # timed once (timing_repeats: 1): the first method of a setting alternates over its instances
    once = timing_order(cells, 0)
    firsts = {(c["shared"]["k0"], c["instance"]): c["algorithm"] for c in once[::2]}
    assert firsts[(1, 0)] != firsts[(1, 1)] and firsts[(2, 0)] != firsts[(2, 1)]


def test_configfile_with_a_duplicate_key_is_rejected(tmp_path):
    bad = tmp_path / "dup.yaml"
    bad.write_text("seed: 1\nscale: quick\nseed: 2\n")
    res = dry_run("--configfile", str(bad))
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "dup.yaml" in out and "duplicate key 'seed'" in out and "line 3" in out


def test_yaml_1_2_numbers_are_numbers_in_config_files_and_on_the_command_line(tmp_path):
    """One stated rule (#27): a plain scalar that is a YAML 1.2 float (`5e-1`, `1.0e4`) is a float,
    whether in config.yaml, a paper fragment, a --configfile or a --config value; a quoted one
    stays a string and is rejected where a number is required."""
    from fedrepro.experiments.yamlio import read_yaml, yaml12_numbers

    doc = tmp_path / "numbers.yaml"
    doc.write_text("a: 5e-1\nb: 1.0e4\nc: '5e-1'\nd: 1e\ne: 3\n")
    assert read_yaml(doc) == {"a": 0.5, "b": 1.0e4, "c": "5e-1", "d": "1e", "e": 3}
    assert yaml12_numbers({"x": ["5e-1", "abc", 2]}) == {"x": [0.5, "abc", 2]}

    block = ("papers: []\nexperiments:\n  tiny:\n    problem: {name: linreg_synthetic, m: 4, n: 5}\n"
             "    algorithms: {fedavg: {step_c: 5e-1}}\n    rho: %s\n    seeds: 1\n    max_rounds: 2\n")
    good = tmp_path / "good.yaml"
    good.write_text(block % "5e-1")
    res = dry_run("--configfile", str(good), "--config", "seed=2")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    bad = tmp_path / "quoted.yaml"
    bad.write_text(block % "'5e-1'")
    res = dry_run("--configfile", str(bad))
    assert res.returncode != 0 and "rho" in res.stdout + res.stderr


def test_a_run_repeated_by_a_later_experiment_is_copied_not_rerun(tmp_path):
    """Experiment b repeats a's k0 = 2 runs (cells.same_runs): b's job waits for a's file and copies
    those rows relabelled (its own experiment, cell ids and swept columns; the one run's timings);
    b's other runs run. The provenance names the copied runs."""
    import json

    import pandas as pd
    import yaml

    from fedrepro.experiments.results import read_metadata

    block = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
             "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}}, "grid": {"k0": [1, 2]},
             "seeds": 1, "max_rounds": 4, "rho": 0.5, "stop": {"rule": "none"},
             "stop_by_algorithm": {"fedavg": {"rule": "target", "reference": "fedadmm"}}}
    config = tmp_path / "same.yaml"
    config.write_text(yaml.safe_dump({"papers": [], "experiments": {
        "a": block, "b": {**block, "grid": {"k0": [2, 3], "problem.n": [5]}}}}))
    res = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "w"), "--configfile",
                          str(config), "-j", "2", "results/custom/b.parquet", "results/custom/a.parquet"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    w = tmp_path / "w"
    a, b = pd.read_parquet(w / "results/custom/a.parquet"), pd.read_parquet(w / "results/custom/b.parquet")
    assert sorted(b["k0"].unique()) == [2, 3] and (b["experiment"] == "b").all() and (b["n"] == 5).all()
    assert set(b["swept"]) == {json.dumps(["k0", "n"])} and "n" not in a.columns
    same = read_metadata(w / "results/custom/b.parquet")["same_runs"]
    assert len(same) == 2 and all(v.startswith("custom/a/") for v in same.values())
    logs = "".join(p.read_text() for p in (w / "logs/cells/custom/b").glob("*.log"))
    assert logs.count("rows copied") == 2
    for cell, source in same.items():
        mine, theirs = b[b["cell"] == cell], a[a["cell"] == source.split("/")[-1]]
        assert mine["run_cpu_time"].iloc[0] == theirs["run_cpu_time"].iloc[0]          # one run, not two
        keep = [c for c in theirs.columns if c not in ("experiment", "cell", "swept")]
        pd.testing.assert_frame_equal(mine[keep].reset_index(drop=True), theirs[keep].reset_index(drop=True))


def test_job_priority_ranks_by_modelled_work_below_the_data_jobs():
    from fedrepro.experiments.resources import DATA_PRIORITY, job_priority, modelled_cell_seconds

    cell = {"algorithm": "fedavg", "problem": {"name": "linreg_synthetic", "m": 1000, "n": 1000},
            "k0": 10, "rho": 0.5, "max_rounds": 200}
    assert job_priority([cell]) == round(modelled_cell_seconds(cell)) > 0
    assert job_priority([dict(cell, max_rounds=400)]) > job_priority([cell])
    assert job_priority([cell, cell]) > job_priority([cell])
    assert job_priority([]) == 0                       # a job that only copies earlier runs
    assert job_priority([dict(cell, max_rounds=10 ** 12)]) == DATA_PRIORITY - 1


def test_the_costliest_run_starts_first(tmp_path):
    """Among ready jobs the greedy scheduler starts the highest priority first: with one core the
    jobs run in the order of their rounds (300, 30, 3), not in the order of the config or the targets."""
    import json

    import yaml

    config = tmp_path / "three.yaml"
    problem = {"name": "linreg_synthetic", "m": 8, "n": 5}
    config.write_text(yaml.safe_dump({"papers": [], "experiments": {
        name: {"problem": problem, "algorithms": {"fedadmm": {}}, "seeds": 1, "max_rounds": rounds, "k0": 2,
               "rho": 0.5, "stop": {"rule": "none"}}
        for name, rounds in (("a_mid", 30), ("b_short", 3), ("c_long", 300))}}))
    res = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "w"), "--configfile",
                          str(config), "-j", "1", "--scheduler", "greedy",
                          *[f"results/custom/{name}.parquet" for name in ("a_mid", "b_short", "c_long")]],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    runs = [json.loads(line) for line in (tmp_path / "w/logs/profile/run_cells.jsonl").read_text().splitlines()]
    order = [r["output"].split("/")[3] for r in sorted(runs, key=lambda r: r["start"])]
    assert order == ["c_long", "a_mid", "b_short"]


def test_more_seeds_rerun_nothing_already_computed(tmp_path):
    """The verify build's second look raises seeds (fedrepro.claims.plan): the jobs are re-cut, and a run an
    earlier job computed is copied by its cell id, not computed again (scripts/verify.sh passes
    --rerun-triggers mtime input: the config hash differs between the looks)."""
    import pandas as pd
    import yaml

    block = {"problem": {"name": "linreg_synthetic", "m": 6, "n": 4}, "algorithms": {"fedadmm": {}},
             "grid": {"k0": [1, 2]}, "seeds": 2, "max_rounds": 3, "rho": 0.5, "stop": {"rule": "none"}}
    w = tmp_path / "w"

    def build(seeds):
        config = tmp_path / f"s{seeds}.yaml"
        config.write_text(yaml.safe_dump({"papers": [], "cells_per_job": {"quick": 3},
                                          "experiments": {"e": {**block, "seeds": seeds}}}))
        res = subprocess.run([SNAKEMAKE, "results/custom/e.parquet", "-s", str(ROOT / "Snakefile"), "-d", str(w),
                              "--configfile", str(config), "-j", "2", "--rerun-triggers", "mtime", "input"],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        return pd.read_parquet(w / "results/custom/e.summary.parquet")

    first = build(2).set_index("cell")
    logs_before = {p.name for p in (w / "logs/cells/custom/e").glob("*.log")}
    second = build(6).set_index("cell")
    assert len(first) == 4 and len(second) == 12 and set(first.index) <= set(second.index)
    new_logs = [p for p in (w / "logs/cells/custom/e").glob("*.log") if p.name not in logs_before]
    text = "".join(p.read_text() for p in new_logs)
    copied = text.count("computed by an earlier job")
    assert copied == sum(c in text for c in first.index) and copied >= 1    # every old run in a re-cut job: copied
    assert text.count("done: status=") == 8                                  # only the 8 new runs ran
    for cell in first.index:                                                 # the old runs' own timings kept
        assert second.at[cell, "run_cpu_time"] == first.at[cell, "run_cpu_time"]


def test_target_custom_lists_only_the_users_experiments(tmp_path):
    """`snakemake -j 2 custom` builds the config's own experiments (their runs, results, figures, the skipped
    list and provenance) and none of the papers' jobs, with the papers still in `papers:` (issue #44)."""
    import yaml

    config = tmp_path / "own.yaml"
    config.write_text(yaml.safe_dump({"papers": ["fedepm"], "experiments": {"mine": {
        "problem": {"name": "linreg_synthetic", "m": 4, "n": 3}, "algorithms": {"fedadmm": {}},
        "max_rounds": 2, "k0": 1, "rho": 1.0, "stop": {"rule": "none"}}}}))
    base = [SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "w"), "--configfile", str(config),
            "-n", "-j", "1"]
    res = subprocess.run([*base, "custom"], capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    rules = {r.rstrip(":") for r in (line.split()[1] for line in out.splitlines() if line.startswith("rule "))}
    # the data its experiments read (config.yaml's examples read a dataset) and their label counts come along
    assert rules - {"fetch", "preprocess"} == {"run_cells", "aggregate", "custom_plots", "partitions", "skipped",
                                                "provenance", "custom"}, out[-3000:]
    assert "results/custom/mine.parquet" in out and "figures/custom/mine_rounds.pdf" in out
    assert "fedepm" not in "\n".join(line for line in out.splitlines() if "output:" in line), out[-3000:]
    # the whole build lists the paper's jobs beside them (what `custom` leaves out)
    everything = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert "results/fedepm/claims.parquet" in everything.stdout + everything.stderr
