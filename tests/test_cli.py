import numpy as np
import pandas as pd
import pytest

from fedrepro.cli import main
from fedrepro.experiments.results import read_metadata


@pytest.fixture
def toy_npz(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    w = rng.normal(size=5)
    path = tmp_path / "toy.npz"
    np.savez(path, X=X, y=X @ w + 0.01 * rng.normal(size=300), client=np.repeat(np.arange(6), 50))
    return path, X, X @ w


def test_cli_runs_fedadmm_on_user_npz(toy_npz, tmp_path, capsys):
    path, X, _ = toy_npz
    out = tmp_path / "run.parquet"
    assert main(["run", "--algorithm", "fedadmm", "--problem", "linreg", "--data", str(path), "--k0", "5",
                 "--rho", "0.5", "--rounds", "40", "--seed", "3", "--out", str(out), "--quiet"]) == 0
    df = pd.read_parquet(out)
    assert df["round"].tolist() == list(range(41))
    assert (df["algorithm"] == "fedadmm").all() and (df["m"] == 6).all() and (df["k0"] == 5).all()
    assert df["objective"].iloc[-1] < 0.01 * df["objective"].iloc[0]
    assert "cli" in read_metadata(out)
    assert "fedadmm: status=max_rounds" in capsys.readouterr().out


def test_cli_says_when_the_objective_grew_or_diverged(toy_npz, tmp_path, capsys):
    """A run that ends at max_rounds with an objective far above its start is not reported as if it
    were fine (issue #44: a CLI run ending at objective 1,068 reported only max_rounds)."""
    path, X, _ = toy_npz
    out = tmp_path / "run.parquet"
    for rounds, said in ((3, "warning: the objective grew from"), (7, "warning: diverged: the objective went from")):
        assert main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(path), "--k0", "5",
                     "--param", "step_c=3", "--rounds", str(rounds), "--out", str(out), "--quiet"]) == 0
        text = capsys.readouterr().out
        f = pd.read_parquet(out)["objective"].to_numpy()
        assert "status=max_rounds" in text and said in text
        assert (f.max() > 1e6 * f[0]) == ("diverged" in text)


def test_growth_note_and_divergence_definition():
    from fedrepro.figures.divergence import growth_note, has_diverged, objective_growth
    assert growth_note([0.69, 0.5, 0.4]) is None and not has_diverged([0.69, 0.5])
    assert "1,548 times" in growth_note([0.69, 5.0, 1068.0]) and not has_diverged([0.69, 1068.0])
    assert has_diverged([0.69, 1e3, 1e12]) and growth_note([0.69, 1e12]).startswith("diverged")
    assert has_diverged([0.69, np.nan]) and has_diverged([0.69, np.inf]) and objective_growth([np.nan]) is None
    assert has_diverged([0.0, 2e6]) and not has_diverged([0.0, 5e5])      # |f0| = 0: growth over 1


def test_cli_errors_name_the_problem(toy_npz, tmp_path):
    path, X, y = toy_npz
    with pytest.raises(SystemExit, match="no parameter\\(s\\) \\['bogus'\\]"):
        main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(path), "--param", "bogus=1",
              "--out", str(tmp_path / "x.parquet")])
    bad = tmp_path / "bad.npz"
    np.savez(bad, X=X, y=y)
    with pytest.raises(SystemExit, match="lacks array\\(s\\) \\['client'\\]"):
        main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(bad), "--out", str(tmp_path / "x.parquet")])
    with pytest.raises(SystemExit, match="labels y in \\{0, 1\\}"):
        main(["run", "--algorithm", "fedavg", "--problem", "logreg", "--data", str(path), "--out", str(tmp_path / "x.parquet")])
    assert not (tmp_path / "x.parquet").exists()


def test_cli_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("fedadmm", "fedepm", "frpg", "adult", "pair_digit", "laplace_epm", "gaussian"):
        assert word in out


@pytest.fixture
def logreg_npz(tmp_path):
    from tests.toys import write_logreg_npz
    return write_logreg_npz(tmp_path)


def _run_fedepm(npz, out, *extra):
    return main(["run", "--algorithm", "fedepm", "--problem", "logreg", "--data", str(npz), "--k0", "3",
                 "--rho", "0.5", "--rounds", "6", "--seed", "2", "--mechanism", "laplace_epm",
                 "--mechanism-param", "epsilon=1.0", "--out", str(out), "--quiet", *extra])


def test_cli_fedepm_weights_default_to_ones(logreg_npz, tmp_path):
    # FedEPM's paper/code objective is f = sum_i f_i (weights 1, adult_logreg); the CLI defaults to it
    npz, X, y = logreg_npz
    assert _run_fedepm(npz, tmp_path / "default.parquet") == 0
    assert _run_fedepm(npz, tmp_path / "ones.parquet", "--problem-param", "weights=[1, 1, 1, 1, 1, 1]") == 0
    assert _run_fedepm(npz, tmp_path / "half.parquet", "--problem-param", "weights=[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]") == 0
    default, ones, half = (pd.read_parquet(tmp_path / f"{k}.parquet") for k in ("default", "ones", "half"))
    np.testing.assert_array_equal(default["objective"], ones["objective"])
    np.testing.assert_allclose(default["objective"], 2 * half["objective"], rtol=1e-12)
    assert '"weights": "ones"' in default["problem"].iloc[0]


def test_cli_replays_selections_and_noise(logreg_npz, tmp_path, capsys):
    from fedrepro.algorithms import make_algorithm
    from fedrepro.cli import problem_from_npz
    from fedrepro.sim.privacy import build_mechanism
    from fedrepro.sim.replay import load_replay
    from fedrepro.sim.loop import simulate

    npz, X, y = logreg_npz
    sel = tmp_path / "sel.csv"
    sel.write_text("round,client\n" + "".join(f"{r},{i}\n" for r in range(6) for i in (r % 5, (r + 2) % 5, 5)))
    noise = np.random.default_rng(5).standard_normal((6 + 3 * 6 + 4, 4))
    np.save(tmp_path / "noise.npy", noise)
    out = tmp_path / "replayed.parquet"
    assert _run_fedepm(npz, out, "--replay-selections", str(sel), "--replay-noise", str(tmp_path / "noise.npy")) == 0
    assert "replayed noise: used 24 of the 28 rows" in capsys.readouterr().out
    df = pd.read_parquet(out)
    replay = load_replay(sel, tmp_path / "noise.npy")
    problem = problem_from_npz("logreg", npz, {}, default_weights="ones")
    res = simulate(problem, make_algorithm("fedepm"), k0=3, rho=0.5, max_rounds=6, seed=123, replay=replay,
                   mechanism=build_mechanism({"name": "laplace_epm", "epsilon": 1.0}))
    np.testing.assert_array_equal(df["objective"], [t["objective"] for t in res.trace])
    meta = read_metadata(out)
    assert meta["replay"]["selections"]["file"] == str(sel) and len(meta["replay"]["noise"]["sha256"]) == 64


def test_cli_replay_errors_name_file_and_row_and_write_nothing(logreg_npz, tmp_path):
    npz, X, y = logreg_npz
    out = tmp_path / "x.parquet"
    sel = tmp_path / "sel.csv"
    sel.write_text("round,client\n0,1\n1,9\n")
    with pytest.raises(SystemExit, match=r"error: replay selections file .*sel.csv, line 3 \(round=1, client=9\)"):
        _run_fedepm(npz, out, "--replay-selections", str(sel))
    sel.write_text("round,client\n0,1\n1,2\n")
    with pytest.raises(SystemExit, match="covers rounds 0..1 but the run may perform 6 rounds.*--rounds"):
        _run_fedepm(npz, out, "--replay-selections", str(sel))
    np.save(tmp_path / "noise.npy", np.zeros((8, 4)))
    with pytest.raises(SystemExit, match="noise.npy has 8 rows but round 0 needs 3 more"):
        _run_fedepm(npz, out, "--replay-noise", str(tmp_path / "noise.npy"))
    np.save(tmp_path / "wide.npy", np.zeros((40, 5)))
    with pytest.raises(SystemExit, match="wide.npy has rows of 5 entries; the model has n = 4"):
        _run_fedepm(npz, out, "--replay-noise", str(tmp_path / "wide.npy"))
    assert not out.exists()


def test_cli_client_ids_alias_and_the_cli_takes_the_workflow_path(toy_npz, tmp_path):
    """`client_ids` is an alias of `client`; the CLI run equals run_cell's run of the same cell."""
    from fedrepro.cli import build_parser, cli_cell, problem_from_npz
    from fedrepro.experiments.runner import build_run

    path, X, y = toy_npz
    with np.load(path) as z:
        alias = tmp_path / "alias.npz"
        np.savez(alias, X=z["X"], y=z["y"], client_ids=z["client"])
        both = tmp_path / "both.npz"
        np.savez(both, X=z["X"], y=z["y"], client=z["client"], client_ids=z["client"])
    flags = ["--algorithm", "fedadmm", "--problem", "linreg", "--k0", "3", "--rho", "0.5", "--rounds", "8",
             "--seed", "2", "--quiet", "--attack", "none", "--attack-param", "faulty=[0]"]
    for data in (path, alias):
        assert main(["run", *flags, "--data", str(data), "--out", str(tmp_path / f"{data.stem}.parquet")]) == 0
    a, b = (pd.read_parquet(tmp_path / f"{s}.parquet") for s in ("toy", "alias"))
    np.testing.assert_array_equal(a["objective"], b["objective"])
    with pytest.raises(SystemExit, match="has both 'client' and 'client_ids'"):
        main(["run", *flags, "--data", str(both), "--out", str(tmp_path / "x.parquet")])
    # the same cell through build_run (the workflow's path) gives the same numbers
    args = build_parser().parse_args(["run", *flags, "--data", str(path), "--out", "unused"])
    cell = cli_cell(args, {}, None)
    assert cell["attack"] == {"name": "none", "faulty": [0]} and cell["max_rounds"] == 8
    run = build_run(cell, problem=problem_from_npz("linreg", path, {}))
    assert run.kwargs["attack"].faulty is None           # NoAttack, prepared by simulate
    np.testing.assert_array_equal([r["objective"] for r in run.simulate().trace], a["objective"])


def test_cli_unsuitable_pairing_is_a_clean_error(tmp_path, capsys):
    rng = np.random.default_rng(0)
    data = tmp_path / "d.npz"
    np.savez(data, X=rng.normal(size=(40, 3)), y=rng.normal(size=40), client=np.repeat(np.arange(4), 10))
    out = tmp_path / "r.parquet"
    with pytest.raises(SystemExit) as exc:
        main(["run", "--algorithm", "krum", "--problem", "linreg", "--data", str(data), "--out", str(out)])
    assert "cannot run on problem" in str(exc.value) and "krum" in str(exc.value)
    assert not out.exists()


def test_cli_runs_a_neural_model_on_an_npz_and_on_a_registry_dataset(tmp_path, capsys):
    from fedrepro.data.dataset import Dataset

    rng = np.random.default_rng(0)
    X, y = rng.random((120, 784)), rng.integers(0, 10, 120)
    data = tmp_path / "img.npz"
    np.savez(data, X=X, y=y, client=np.repeat(np.arange(4), 30), X_test=X[:20], y_test=y[:20])
    out = tmp_path / "a.parquet"
    assert main(["run", "--algorithm", "fedavg_sgd", "--problem", "mlp1", "--data", str(data), "--param", "E=1",
                 "--param", "B=10", "--rounds", "2", "--out", str(out), "--quiet"]) == 0
    df = pd.read_parquet(out)
    assert df["round"].tolist() == [0, 1, 2] and "test_accuracy" in df and (df["m"] == 4).all()
    assert "test_accuracy=" in capsys.readouterr().out
    Dataset("mnist", X, y, np.array(["train"] * 100 + ["test"] * 20)).save(tmp_path / "mnist")
    out2 = tmp_path / "b.parquet"
    assert main(["run", "--algorithm", "fedavg_sgd", "--problem", "neural", "--problem-param", "model=mlp1",
                 "--problem-param", "m=5", "--data-dir", str(tmp_path), "--param", "E=1", "--rounds", "1",
                 "--store", "auto", "--metrics", "objective,test_accuracy", "--out", str(out2), "--quiet"]) == 0
    df2 = pd.read_parquet(out2)
    assert (df2["m"] == 5).all() and {"objective", "test_accuracy"} <= set(df2)
    with pytest.raises(SystemExit, match="disagree"):
        main(["run", "--algorithm", "fedavg_sgd", "--problem", "mlp1", "--problem-param", "model=cnn1",
              "--data", str(data), "--out", str(tmp_path / "c.parquet")])
    with pytest.raises(SystemExit, match="needs --data"):
        main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--out", str(tmp_path / "c.parquet")])
    with pytest.raises(SystemExit, match="LipschitzProblem"):
        main(["run", "--algorithm", "fedadmm", "--problem", "mlp1", "--data", str(data),
              "--out", str(tmp_path / "c.parquet")])
    assert not (tmp_path / "c.parquet").exists()


@pytest.mark.parametrize("flags, message", [
    (["--rounds", "-5"], r"run: max_rounds=-5 is not allowed"),
    (["--k0", "0"], r"run: k0=0 is not allowed"),
    (["--rho", "0"], r"run: rho=0.0 is not allowed"),
    (["--rho", "2"], r"run: rho=2.0 is not allowed"),
    (["--eval-every", "0"], r"run: eval_every=0 is not allowed"),
    (["--problem-param", "lamda=0.1"], r"problem 'linreg': unknown key\(s\) \['lamda'\]"),
    (["--param", "step_c=-1e4"], r"fedavg: step_c=-10000.0 is not allowed"),
])
def test_cli_bad_input_is_a_clean_error_before_any_work(toy_npz, tmp_path, flags, message):
    """Bad flags end with `error: ...` naming the key and what is allowed, no traceback, no output (#14, 5)."""
    path, _, _ = toy_npz
    out = tmp_path / "x.parquet"
    with pytest.raises(SystemExit, match="error: .*" + message):
        main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(path), "--out", str(out),
              "--quiet", *flags])
    assert not out.exists()


def test_cli_numbers_are_numbers_and_non_finite_data_is_rejected(toy_npz, tmp_path):
    path, X, y = toy_npz
    out = tmp_path / "r.parquet"
    assert main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(path), "--param", "step_c=5e-1",
                 "--rounds", "2", "--out", str(out), "--quiet"]) == 0
    assert '"step_c": 0.5' in pd.read_parquet(out)["params"].iloc[0]          # a number, not the string "5e-1"
    with np.load(path) as z:
        client = z["client"]
    for name in ("X", "y"):
        arrays = {"X": X.copy(), "y": y.copy(), "client": client}
        arrays[name].flat[3] = np.nan
        bad = tmp_path / f"nan_{name}.npz"
        np.savez(bad, **arrays)
        with pytest.raises(SystemExit, match=rf"error: .*nan_{name}.npz: {name} has 1 non-finite value"):
            main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(bad), "--out", str(out),
                  "--quiet"])


def test_cli_threads(toy_npz, tmp_path):
    """--threads sets the kernels' threads for the run; out of range is an error before any work."""
    import numba

    from fedrepro.core.threads import kernel_threads, set_kernel_threads

    path, _, _ = toy_npz
    out = tmp_path / "t.parquet"
    for bad in ("0", str(numba.config.NUMBA_NUM_THREADS + 1)):
        with pytest.raises(SystemExit, match=f"--threads {bad} is not allowed: give 1 to"):
            main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(path), "--threads", bad,
                  "--out", str(out)])
    assert not out.exists()
    before = kernel_threads()
    try:
        assert main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(path), "--threads", "1",
                     "--rounds", "3", "--out", str(out), "--quiet"]) == 0
        assert kernel_threads() == 1 and out.exists()
    finally:
        set_kernel_threads(before)


def _run(args):
    from fedrepro.cli import main

    return main(["run", *args])


@pytest.mark.parametrize("case", ["out_under_file", "out_is_folder", "out_parent_missing", "empty_npz", "x_1d",
                                  "text_npz", "metrics_bogus", "step_inf"])
def test_cli_input_errors_name_the_argument_before_any_work(toy_npz, tmp_path, case, monkeypatch):
    """Every input error is one 'error:' line naming the argument or file, found before the run;
    nothing is written."""
    import fedrepro.experiments.runner as runner

    def never(*a, **k):
        raise AssertionError("the run started despite the bad input")
    monkeypatch.setattr(runner.Run, "simulate", never)
    data, out = str(toy_npz[0]), str(tmp_path / "x.parquet")
    extra = []
    if case == "out_under_file":
        (tmp_path / "afile").write_text("x")
        out, words = str(tmp_path / "afile" / "x.parquet"), ["--out", "is a file"]
    elif case == "out_is_folder":
        out, words = str(tmp_path), ["--out", "is a folder"]
    elif case == "out_parent_missing":
        out, words = str(tmp_path / "nope" / "x.parquet"), ["--out", "does not exist"]
    elif case == "empty_npz":
        np.savez(tmp_path / "empty.npz")
        data, words = str(tmp_path / "empty.npz"), ["empty.npz", "lacks"]
    elif case == "x_1d":
        np.savez(tmp_path / "flat.npz", X=np.ones(6), y=np.zeros(6), client=np.repeat([0, 1], 3))
        data, words = str(tmp_path / "flat.npz"), ["flat.npz", "2-D"]
    elif case == "text_npz":
        (tmp_path / "text.npz").write_text("not an archive\n")
        data, words = str(tmp_path / "text.npz"), ["text.npz", "not an npz archive"]
    elif case == "metrics_bogus":
        extra, words = ["--metrics", "bogus"], ["bogus"]
    else:
        extra, words = ["--param", "step_c=inf"], ["step_c"]
    with pytest.raises(SystemExit) as err:
        _run(["--algorithm", "fedavg", "--problem", "linreg", "--data", data, "--out", out, "--rounds", "3", *extra])
    msg = str(err.value)
    assert msg.startswith("error:") and "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
    assert not (tmp_path / "x.parquet").exists()


def test_cli_label_errors_name_the_file_and_the_labels_found(toy_npz, tmp_path):
    """Issue #44: the CLI's label errors named neither the file nor the labels found."""
    path, X, y = toy_npz
    out = tmp_path / "x.parquet"
    with pytest.raises(SystemExit) as err:
        main(["run", "--algorithm", "fedavg", "--problem", "logreg", "--data", str(path), "--out", str(out)])
    msg = str(err.value)
    assert str(path) in msg and "labels y in {0, 1}" in msg and "distinct value(s)" in msg, msg
    frac = tmp_path / "frac.npz"
    rng = np.random.default_rng(0)
    np.savez(frac, X=rng.standard_normal((40, 784)).astype(np.float32), y=rng.random(40) * 3,
             client=np.repeat(np.arange(4), 10))
    with pytest.raises(SystemExit) as err:
        main(["run", "--algorithm", "fedavg_sgd", "--problem", "mlp1", "--data", str(frac), "--out", str(out)])
    msg = str(err.value)
    assert str(frac) in msg and "integer class labels" in msg and "distinct value(s)" in msg, msg
    assert not out.exists()
