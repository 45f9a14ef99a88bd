"""The frozen run spec (issue #45 item 1): a cell of a config block and the CLI's flags make the same typed
run; ``to_dict`` gives today's cell dict back exactly (so the ids do not change); the run settings are
namespaced (``run.rho`` is the participation rate, an algorithm's parameters live under it); and no module
outside the spec's constructors reads a cell by string key. The CLI takes the workflow's path (item 4)."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import fedrepro
from fedrepro.experiments.expansion import all_cells, cell_id, expand
from fedrepro.experiments.spec import RunSpec, as_spec

ROOT = Path(fedrepro.__file__).resolve().parents[1]

BLOCK = {
    "problem": {"name": "linreg_synthetic", "m": 6, "n": 5},
    "algorithms": {"fedavg": {}, "fedprox": {"mu_rel": [0.01, 0.1]}},
    "grid": {"rho": [0.5, 1.0]},
    "k0": 2, "max_rounds": 3, "seeds": 2,
}


def _cells():
    return expand("custom", "toy", BLOCK, "quick", base_seed=7)


def test_from_cell_gives_the_cell_back_exactly_and_its_id():
    cells = _cells()
    assert len(cells) == 2 * 2 + 2 * 2 * 2
    for cell in cells:
        spec = RunSpec.from_cell(cell)
        assert spec.to_dict() == cell and list(spec.to_dict()) == list(cell)     # keys, values and order
        assert spec.id == cell["cell"] == cell_id(cell) and spec.name == spec.id
        assert RunSpec.from_cell({k: v for k, v in cell.items() if k != "cell"}).name == spec.id


def test_the_papers_quick_cells_round_trip():
    """Every cell of the five papers at quick scale: the spec gives the dict and the id back."""
    config = {"papers": ["fedadmm_zhou", "fedepm", "frpg", "fedadmm_gong", "aspire"], "scale": "quick",
              "seed": 20260101}
    n = 0
    for cells in all_cells(config, ROOT).values():
        for cell in cells:
            spec = RunSpec.from_cell(cell)
            assert spec.to_dict() == cell and spec.id == cell["cell"]
            n += 1
    assert n > 1000


def test_the_settings_are_namespaced():
    """``rho`` of the run is the participation rate; FedProx's ``mu_rel`` is the algorithm's own parameter."""
    prox = [RunSpec.from_cell(c) for c in _cells() if c["algorithm"] == "fedprox"]
    assert {s.run.rho for s in prox} == {0.5, 1.0}
    assert {s.algorithm.params["mu_rel"] for s in prox} == {0.01, 0.1}
    assert all("rho" not in s.algorithm.params and s.run.k0 == 2 and s.run.max_rounds == 3 for s in prox)
    assert {s.seed - s.instance for s in prox} == {7}
    spec = prox[0]
    assert spec.label.paper == "custom" and spec.label.experiment == "toy" and "mu_rel" in spec.label.columns
    assert spec.run.settings()["store"] == "dense" and spec.run.tau is None


def test_the_spec_is_frozen():
    spec = RunSpec.from_cell(_cells()[0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.run.rho = 0.1


def test_a_key_without_a_place_is_refused():
    cell = {**_cells()[0], "rhoo": 0.5}
    with pytest.raises(ValueError, match=r"cell keys \['rhoo'\] are not keys of a run"):
        RunSpec.from_cell(cell)
    with pytest.raises(TypeError, match="a run is a RunSpec or a cell dict"):
        as_spec(["not", "a", "run"])


def test_from_cli_is_the_cli_run():
    spec = RunSpec.from_cli(algorithm="fedprox", params={"mu": 0.1}, problem={"name": "linreg", "data": "x.npz"},
                            seed=2, k0=3, rho=0.5, max_rounds=8, eval_every=1, stop={"rule": "max_rounds"},
                            mechanism=None, attack={"name": "none"}, metrics=["objective"])
    assert spec.name == "cli" and spec.label.paper == "custom" and spec.label.experiment == "cli"
    assert spec.run.rho == 0.5 and spec.algorithm.params == {"mu": 0.1} and spec.run.metrics == ["objective"]
    assert spec.to_dict() == {
        "paper": "custom", "experiment": "cli", "cell": "cli", "algorithm": "fedprox", "params": {"mu": 0.1},
        "seed": 2, "instance": 0, "k0": 3, "rho": 0.5, "max_rounds": 8, "eval_every": 1,
        "metrics": ["objective"], "stop": {"rule": "max_rounds"}, "mechanism": None, "attack": {"name": "none"},
        "problem": {"name": "linreg", "data": "x.npz"}}
    assert RunSpec.from_cell(spec.to_dict()) == spec


def test_run_cell_takes_a_spec_and_a_dict_alike():
    from fedrepro.experiments.runner import run_cell

    cell = _cells()[-1]
    a = run_cell(RunSpec.from_cell(cell), data_dir=None)
    b = run_cell(cell, data_dir=None)
    assert (a["cell"] == cell["cell"]).all() and a.drop(columns=[c for c in a if "time" in c]).equals(
        b.drop(columns=[c for c in b if "time" in c]))


#: modules that build cells (the constructors' side) and may read a cell dict by key
CONSTRUCTORS = {"fedrepro/experiments/spec.py", "fedrepro/experiments/expansion.py"}


#: names that hold a cell: besides these, a loop variable over something named ``...cells...`` (``for c in cells``)
#: or ``cs`` (``for b, cs in batches.items() for c in cs``)
CELL_NAMES = ("cell", "source", "ref")


def _smk_python(text: str) -> list[tuple[int, str]]:
    """The Python of a Snakemake file (its rule syntax is not Python), as (first line, source) pieces: each
    top-level statement (``def``, assignment, ``if``, ...: from its line to the next line at column 0) that is
    not a rule (``rule``, ``checkpoint``, ``localrules``, ``wildcard_constraints``, ``include`` ...) nor holds
    one, and each ``lambda`` inside a rule (or a block holding rules), up to the end of the expression."""
    lines = text.splitlines()
    snakemake = ("rule ", "checkpoint ", "localrules", "wildcard_constraints", "include:", "configfile:",
                 "ruleorder", "onstart", "onsuccess", "onerror", "report:", "workdir:", "module ", "use rule")
    pieces, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line[0] in " \t#":
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j][0] in " \t#" or lines[j].startswith(")")):
            j += 1
        block = lines[i:j]
        python = not line.startswith(snakemake)
        if python:
            try:
                ast.parse("\n".join(block))
            except SyntaxError:                           # a block holding rules (``if ...:``, ``for ...:``)
                python = False
        if not python:
            for k, inner in enumerate(block):             # the lambdas of a rule's parameters
                at = inner.find("lambda ")
                if at < 0:
                    continue
                for end in range(k, min(k + 8, len(block))):
                    src = "\n".join([inner[at:], *block[k + 1:end + 1]]).rstrip().rstrip(",")
                    try:
                        ast.parse(src)
                    except SyntaxError:
                        continue
                    pieces.append((i + k + 1, src))
                    break
        else:
            pieces.append((i + 1, "\n".join(block)))
        i = j
    return pieces


def _reads_a_cell_by_key(path: Path) -> list[int]:
    """Lines where a cell (a name of :data:`CELL_NAMES`, or the variable of a loop or comprehension over an
    expression mentioning ``cells``) is read by a string key: ``cell[...]``, ``c.get(...)``. A Snakemake
    file (``.smk``, ``Snakefile``) is scanned in its Python pieces (:func:`_smk_python`)."""
    if path.suffix == ".smk" or path.name == "Snakefile":
        return sorted(n + first - 1 for first, src in _smk_python(path.read_text())
                      for n in _reads_in(ast.parse(src)))
    return _reads_in(ast.parse(path.read_text()))


def _reads_in(tree: ast.AST) -> list[int]:
    """The reads by key in ``tree``, scope by scope: a loop variable over cells names a cell in its own
    function (the outermost, nested ones included) or, outside every function, in the module's code."""
    functions: list[ast.AST] = []

    def module_nodes(node):                                # the module's code outside its functions
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(child)
            else:
                yield child
                yield from module_nodes(child)

    lines = _reads_in_scope(list(module_nodes(tree)))
    for f in functions:
        lines += _reads_in_scope(list(ast.walk(f)))
    return sorted(lines)


def _reads_in_scope(nodes: list[ast.AST]) -> list[int]:
    names = set(CELL_NAMES)
    for node in nodes:
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) \
                and ("cells" in ast.unparse(node.iter).lower() or ast.unparse(node.iter) == "cs"):
            names.add(node.target.id)
    lines = []
    for node in nodes:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in names \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in names:
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_constructors_reads_a_cell_by_key():
    files = [*(ROOT / "fedrepro").rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py"),
             *(ROOT / "workflow" / "rules").glob("*.smk"), ROOT / "Snakefile", *(ROOT / "benchmarks").rglob("*.py")]
    readers = {str(p.relative_to(ROOT)): lines for p in files if (lines := _reads_a_cell_by_key(p))}
    outside = {f: lines for f, lines in readers.items() if f not in CONSTRUCTORS}
    assert not outside, f"read a cell by key instead of taking its RunSpec: {outside}"


def test_the_scan_finds_a_cell_read_by_key(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(cell):\n    return cell['rho'] + cell.get('k0')\n")
    assert _reads_a_cell_by_key(path) == [2, 2]
    path.write_text("def f(cells):\n    return [c['algorithm'] for c in cells] + [x.get('seed') for x in g(cells)]\n")
    assert _reads_a_cell_by_key(path) == [2, 2]
    path.write_text("def f(spec, claims):\n    return spec.run.rho, [c['id'] for c in claims]\n")
    assert _reads_a_cell_by_key(path) == []
    # a loop variable over cells names a cell in its own function only
    path.write_text("def f(cells):\n    return [as_spec(c) for c in cells]\n\n\ndef g(claims):\n"
                    "    return [c.get('id') for c in claims]\n\n\nX = [c['cell'] for b, cs in B.items() for c in cs]\n")
    assert _reads_a_cell_by_key(path) == [9]
    # a Snakemake file: its functions and the lambdas of its rules
    smk = tmp_path / "r.smk"
    smk.write_text("X = 1\n\ndef f(cells):\n    return [c['cell'] for c in cells]\n\n\nrule r:\n"
                   "    output: 'a'\n    params:\n        n=lambda wc: [c.get('seed') for c in cells_of(wc.p)],\n"
                   "        m=lambda wc: spec_of(wc).seed,\n    script: 's.py'\n")
    assert _reads_a_cell_by_key(smk) == [4, 10]


def test_replace_gives_another_run():
    """RunSpec.replace (a claim target's adjust): new settings and stop rule, a new id; the label kept, the
    cell dict's keys in their order; a key that is no run setting is refused."""
    cell = _cells()[-1]
    spec = RunSpec.from_cell(cell)
    new = spec.replace(max_rounds=9, stop={"rule": "none"})
    assert new.run.max_rounds == 9 and new.stop == {"rule": "none"} and spec.run.max_rounds == 3
    assert new.id != spec.id and new.name == new.id and new.label.columns == spec.label.columns
    expected = {**cell, "max_rounds": 9, "stop": {"rule": "none"}}
    expected["cell"] = cell_id(expected)
    assert new.to_dict() == expected and list(new.to_dict()) == list(cell)
    assert spec.replace().id == spec.id and spec.replace(sample_count=5).run.sample_count == 5
    with pytest.raises(ValueError, match=r"\['mu_rel'\] are not run settings"):
        spec.replace(mu_rel=0.5)


def test_replace_gives_a_run_with_other_algorithm_parameters():
    """RunSpec.replace(params=...): the algorithm's own parameters replaced whole (the algorithm kept), a new id,
    the cell dict's keys in their order; the spec it came from unchanged; params that are no dict are refused."""
    cell = _cells()[-1]
    spec = RunSpec.from_cell(cell)
    assert spec.algorithm.name == "fedprox"
    new = spec.replace(params={"mu_rel": 0.5}, max_rounds=9)
    assert new.algorithm.name == "fedprox" and new.algorithm.params == {"mu_rel": 0.5}
    assert spec.algorithm.params == cell["params"] and new.run.max_rounds == 9 and new.id != spec.id
    expected = {**cell, "params": {"mu_rel": 0.5}, "max_rounds": 9}
    expected["cell"] = cell_id(expected)
    assert new.to_dict() == expected and list(new.to_dict()) == list(cell) and new.name == new.id
    assert spec.replace(params=dict(cell["params"])).id == spec.id
    with pytest.raises(ValueError, match="params is the algorithm's parameters as a dict"):
        spec.replace(params=[("mu_rel", 0.5)])


def test_the_cli_and_the_workflow_take_one_path(tmp_path, monkeypatch):
    """``fedrepro run`` builds its run with RunSpec.from_cli and completes it through runner.complete_run,
    the function run_cell (the workflow's path) ends in; the two give the same rows for the same run."""
    import numpy as np
    import pandas as pd

    from fedrepro import cli
    from fedrepro.experiments import runner

    rng = np.random.default_rng(0)
    data = tmp_path / "d.npz"
    np.savez(data, X=rng.normal(size=(40, 3)), y=rng.normal(size=40), client=np.repeat(np.arange(4), 10))
    seen = []
    complete = runner.complete_run

    def spy(spec, run, progress=None):
        seen.append(spec)
        return complete(spec, run, progress)

    monkeypatch.setattr(runner, "complete_run", spy)
    out = tmp_path / "cli.parquet"
    assert cli.main(["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(data), "--rho", "0.5",
                     "--rounds", "4", "--seed", "3", "--quiet", "--out", str(out)]) == 0
    assert len(seen) == 1 and isinstance(seen[0], RunSpec) and seen[0].name == "cli"
    spec = seen[0]
    assert spec.run.rho == 0.5 and spec.run.max_rounds == 4 and spec.seed == 3 and spec.algorithm.name == "fedavg"
    frame = runner.run_cell(spec, data_dir=None)          # the workflow's driver, the same spec
    assert len(seen) == 2 and seen[1] is spec
    a = pd.read_parquet(out)
    np.testing.assert_array_equal(a["objective"], frame["objective"])
    assert (a["cell"] == "cli").all() and (frame["cell"] == "cli").all()


def test_the_build_plan_reads_specs_and_dicts_alike():
    """build_plan reads each cell through its spec: given RunSpecs, it plans what it plans for their dicts."""
    from fedrepro.experiments.build_plan import batches, run_key, same_runs, timing_order

    cells = _cells()
    specs = [RunSpec.from_cell(c) for c in cells]
    assert [run_key(s) for s in specs] == [run_key(c) for c in cells]

    def names(bs):
        return {k: [as_spec(c).name for c in v] for k, v in bs.items()}

    assert names(batches(specs, 3)) == names(batches(cells, 3)) and len(batches(cells, 3)) > 1
    assert [s.name for s in timing_order(specs, 1)] == [as_spec(c).name for c in timing_order(cells, 1)]
    again = expand("custom", "toy2", BLOCK, "quick", base_seed=7)         # the same runs in a later experiment
    by_dicts = same_runs({("custom", "toy"): cells, ("custom", "toy2"): again})
    by_specs = same_runs({("custom", "toy"): specs, ("custom", "toy2"): [RunSpec.from_cell(c) for c in again]})
    assert len(by_dicts) == len(again) and {k: as_spec(v).name for k, v in by_dicts.items()} == \
        {k: v.name for k, v in by_specs.items()}
    assert all(isinstance(v, RunSpec) for v in by_specs.values())
