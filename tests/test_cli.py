import numpy as np
import pandas as pd
import pytest

from fedrepro.cli import main
from fedrepro.results import read_metadata


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
