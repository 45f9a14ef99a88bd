"""aspire's static outputs (spec 002 §6): Tables 1, 2, 5 and Fig. 1 with its two claim helpers."""
import math
import re

import numpy as np
import pytest

from fedrepro.nn.zoo import MODELS
from fedrepro.papers.aspire import static as S

# Table 1's complexity column and Table 2's overall complexity as the paper's LaTeX prints them
PAPER_C = {"box": r"\mathcal{O}(n\log(n))",
           "ellipsoid": r"\mathcal{O}((m+1)^{1/2}n(n^2+m+\sum_{i=1}^m k_i^2)\log(\frac{1}{\varepsilon'}))",
           "polyhedron": r"\mathcal{O}((m+n)^{3/2}n^2\log(\frac{1}{\varepsilon'}))",
           "kl": r"\mathcal{O}((n)^{7/2} \log(\varepsilon'))",
           "wasserstein1": r"\mathcal{O}((m+n)^{3/2}n^2\log(\frac{1}{\varepsilon'}))",
           "cdnorm": r"\mathcal{O}(n\log(n))"}
PAPER_T2_BOX = (r"\mathcal{O}\left(\frac{\mathcal{K}_1}{\varepsilon^6} + \left\lfloor \frac{T_1}{k} "
                r"\right\rfloor n \log(n)\right)")


def norm_latex(s: str) -> str:
    """LaTeX -> the tables' plain notation, whitespace dropped."""
    for a, b in ((r"\left", ""), (r"\right", ""), (r"\frac{\mathcal{K}_1}{\varepsilon^6}", "K_1/ε^6"),
                 (r"\lfloor\frac{T_1}{k}\rfloor", "⌊T_1/k⌋"), (r"\frac{1}{\varepsilon'}", "1/ε'"),
                 (r"\mathcal{O}", "O"), (r"\log", "log"), (r"\varepsilon", "ε"), (r"\sum", "Σ")):
        s = re.sub(r"\s+", "", s).replace(a, b)
    return s


def plain(s: str) -> str:
    return re.sub(r"\s+", "", s)


@pytest.fixture(scope="module")
def t1():
    return S.table1_frame(repeats=3)


def test_table1_rows_and_formulas_as_printed(t1):
    assert list(t1["set"]) == ["box", "ellipsoid", "polyhedron", "kl", "wasserstein1", "cdnorm"]
    for name, row in t1.set_index("set").iterrows():
        assert plain(row["complexity"]) == norm_latex(PAPER_C[name]), name
    assert list(t1["flexibility"]) == ["2N", "1", "L_in × (N+1)", "1", "1", "1"]
    assert list(t1["formulation"]) == ["LP¹", "SOCP", "LP", "REP", "LP", "LP¹"]
    assert "n = N + N^2, m = 1" in t1.set_index("set").loc["wasserstein1", "n, m (Section 5)"]


def test_table1_times_positive_finite(t1):
    cols = [c for c in t1.columns if c.startswith("time N=")]
    assert cols == ["time N=5 (ms)", "time N=15 (ms)", "time N=50 (ms)"]
    v = t1[cols].to_numpy(float)
    assert np.all(np.isfinite(v)) and np.all(v > 0)


def test_feasibility_check_catches_a_wrong_answer(monkeypatch):
    rng = np.random.default_rng(1)
    N = 15
    sets = {name: S.subproblem_instance(name, N, rng) for name in S.SETS}
    onehot = np.eye(N)[0]
    for name, s in sets.items():
        assert S.constraint_violation(s, np.full(N, 1 / N)) <= 1e-12, name       # q is inside every set
        if name != "polyhedron":
            assert S.constraint_violation(s, onehot) > 1e-3, name

    wrong = sets["box"]
    monkeypatch.setattr(wrong, "worst_case", lambda f: np.full(N, 1 / N) + 1e-3)   # sum != 1
    monkeypatch.setattr(S, "subproblem_instance", lambda name, n, rng: wrong)
    with pytest.raises(RuntimeError, match="infeasible"):
        S.solve_times("box", N, repeats=2)


def test_table2_evaluated_by_hand():
    t2 = S.table2_frame().set_index("set")
    assert S.SCMA_QUICK_PARAMS == MODELS["aspire_quick_mlp_scma"].n_params == 22_023
    K1 = 22_023 * 15
    assert math.isclose(t2.loc["box", "total"], K1 / 0.1**6 + 100 * 15 * math.log(15))
    n = 15 + 15**2
    w1 = K1 / 1e-6 + 100 * (1 + n) ** 1.5 * n**2 * math.log(1e6)
    assert math.isclose(t2.loc["wasserstein1", "total"], w1)
    assert math.isclose(t2.loc["kl", "⌊T_1/k⌋ C_set"], 100 * 15**3.5 * math.log(1e6))
    assert plain(t2.loc["box", "overall complexity"]) == norm_latex(PAPER_T2_BOX)
    for name, row in t2.iterrows():
        inner = norm_latex(PAPER_C[name])[2:-1]
        assert plain(row["overall complexity"]) == f"O(K_1/ε^6+⌊T_1/k⌋{inner})", name


def test_table5_paper_numbers_and_realised():
    t5 = S.table5_frame().set_index("dataset")
    assert t5["workers (paper)"].to_dict() == {"SHL": 6, "Person Activity": 5, "SC-MA": 15, "Fashion-MNIST": 3}
    assert t5["categories (paper)"].to_dict() == {"SHL": 8, "Person Activity": 11, "SC-MA": 7, "Fashion-MNIST": 3}
    assert (t5["n_train (ours)"] == "not built here").all()
    got = S.table5_frame({"SC-MA": {"n_train": 100, "n_test": 40, "d": 35, "workers": 15, "classes": 7}})
    got = got.set_index("dataset")
    assert got.loc["SC-MA", "n_train (ours)"] == 100 and got.loc["SC-MA", "d (ours)"] == 35
    assert got.loc["SHL", "d (ours)"] == "not built here"


def test_markdown_tables(tmp_path, t1):
    S.render_table1(tmp_path / "t1", t1)
    S.render_table2(tmp_path / "t2")
    S.render_table5(tmp_path / "t5")
    for stem, rows in (("t1", 6), ("t2", 6), ("t5", 4)):
        lines = [ln for ln in (tmp_path / f"{stem}.md").read_text().splitlines() if ln.startswith("|")]
        assert len(lines) == rows + 2, stem
        cells = {len(re.findall(r"(?<!\\)\|", ln)) for ln in lines}
        assert len(cells) == 1, f"{stem}: a row has a different number of cells (unescaped |)"
        assert (tmp_path / f"{stem}.csv").is_file() and (tmp_path / f"{stem}.tex").is_file()


def test_fig1_writes_png(tmp_path):
    paths = S.fig1(tmp_path / "fig1.png")
    png = tmp_path / "fig1.png"
    assert png in paths and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def f1():
    return S.fig1_frame()


def test_fig1_frame_monotone(f1):
    assert set(f1["panel"]) == set("abcd")
    a = f1[f1["panel"] == "a"]
    assert set(a["set"]) == set(S.SETS) and a["x"].min() == 2 and a["x"].max() == 100
    for name, g in a.groupby("set"):
        assert np.all(np.diff(g.sort_values("x")["complexity"].to_numpy()) > 0), name
    b = f1[f1["panel"] == "b"].pivot(index="x", columns="m", values="complexity")
    assert list(b.columns) == [1, 10, 50, 100] and np.all(np.diff(b.to_numpy(), axis=1) > 0)
    for panel in "cd":
        for name, g in f1[f1["panel"] == panel].groupby("set"):
            d = np.diff(g.sort_values("x")["complexity"].to_numpy())
            if name in ("box", "cdnorm"):
                assert np.allclose(d, 0), (panel, name)           # no eps' in n log n
            else:
                assert np.all(d < 0), (panel, name)               # log(1/eps') falls as eps' grows


def test_fig1_claims(f1):
    g = S.growth_exponents(f1)
    assert S.fastest_growing_set(f1) == "wasserstein1" and g.index[0] == "wasserstein1"
    assert math.isclose(g["kl"], 3.5)
    cheap = S.cheapest_sets(f1, N=100)
    assert set(cheap.index) == {"box", "cdnorm"}
    assert math.isclose(cheap["box"], 100 * math.log(100))


def test_fig1_claim_helpers_can_disagree(f1):
    faster = f1.copy()
    kl = (faster["panel"] == "a") & (faster["set"] == "kl")
    faster.loc[kl, "complexity"] *= faster.loc[kl, "x"] ** 5          # KL now ~ N^8.5 > W1's ~N^6.6
    assert S.fastest_growing_set(faster) == "kl"
    dearer = f1.copy()
    box = (dearer["panel"] == "a") & (dearer["set"] == "box")
    dearer.loc[box, "complexity"] *= 1e9
    assert list(S.cheapest_sets(dearer, N=100).index) == ["cdnorm", "ellipsoid"]
    with pytest.raises(ValueError, match="N = 1000"):
        S.cheapest_sets(f1, N=1000)
