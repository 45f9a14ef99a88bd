"""The package tree is layered: data -> problem/model -> algorithm -> loop -> experiments ->
figures/claims -> papers -> CLI, and no module imports from a layer above its own: at module level or inside a
function (an import deferred into a function is still an arrow), relative imports resolved
(``tests/test_import_graph.py`` checks the same imports for circles)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import fedrepro
from tests.test_import_graph import module_name, resolve

PACKAGE = Path(fedrepro.__file__).parent

# layer of each top-level part of the package (a module may import from its own layer or below)
LAYERS = {
    "core": 0, "data": 1, "nn": 2, "problems": 3, "algorithms": 4, "sim": 5, "experiments": 6,
    "figures": 7, "claims": 7, "papers": 8, "cli": 9, "__init__": 0, "schemas": 0,
}


def _imports(path: Path, module: str | None = None):
    """``(module, names, line)`` of every import statement of the file, wherever it stands (module level, inside a
    function or class); a relative one resolved against ``module`` (default: the file's module in the package)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            name = node.module
            if node.level:
                name = resolve(module or module_name(path), path.name == "__init__.py", node.level, node.module)
            if name:
                yield name, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], node.lineno


_MODULE_TEXT = re.compile(r"^fedrepro(\.\w+)*\.?$")


def _dynamic_imports(path: Path):
    """Modules named by text in a file that imports by name (``importlib.import_module``,
    ``__import__``): every string constant, and the literal head of every f-string, that reads
    ``fedrepro.<part>...`` — what such a file may load, whether or not the name is spelled at the call."""
    tree = ast.parse(path.read_text())
    dynamic = any(isinstance(n, ast.Call) and (getattr(n.func, "attr", None) == "import_module"
                                                or getattr(n.func, "id", None) in ("__import__", "import_module"))
                  for n in ast.walk(tree))
    if not dynamic:
        return
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = str(node.values[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _MODULE_TEXT.match(text):
            found.add((text.rstrip("."), node.lineno))
    yield from sorted(found)


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "fedrepro":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def test_only_the_cli_and_the_package_face_sit_at_the_root():
    root_modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root_modules == ["__init__.py", "cli.py"]
    assert set(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") <= set(LAYERS)


def test_no_import_back_arrow():
    arrows = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        own = rel.parts[0].removesuffix(".py")
        named = [(m, [], line) for m, line in _dynamic_imports(path)]
        for module, names, line in [*_imports(path), *named]:
            part = _part(module)
            if part is None:
                continue
            if part == "__init__" and names and names[0] in LAYERS:   # `from fedrepro import sim`
                part = names[0]
            if LAYERS[part] > LAYERS[own]:
                arrows.append(f"{rel}:{line} ({own}) imports {module} ({part})")
    assert not arrows, "\n".join(arrows)


def test_paper_modules_are_loaded_only_by_the_paper_registry():
    """The paper plug-ins (``fedrepro.papers.<paper>.figures`` / ``.claims``) are loaded by name in one
    place, :mod:`fedrepro.papers.registry`; no lower layer reaches them, by import or by name."""
    loaders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "papers":
            continue
        text = path.read_text()
        if re.search(r"fedrepro\.papers\.\{|f\"fedrepro\.papers|\"fedrepro\.papers\.", text):
            loaders.append(str(rel))
    assert not loaders, loaders
    source = (PACKAGE / "papers" / "registry.py").read_text()
    assert "import_module" in source


def test_a_dynamic_back_arrow_is_detected(tmp_path):
    """A lower layer that loads a paper module by name (the hidden upward import) is flagged."""
    bad = tmp_path / "fake.py"
    bad.write_text("import importlib\n\ndef checks(p):\n    return importlib.import_module(f\"fedrepro.papers.{p}.claims\")\n")
    (module, line), = list(_dynamic_imports(bad))
    assert module == "fedrepro.papers" and LAYERS[_part(module)] > LAYERS["claims"]


def test_claims_do_not_import_figure_modules():
    for path in (PACKAGE / "papers").glob("*/claims.py"):
        for module, _, line in _imports(path):
            assert not module.endswith(".figures"), f"{path.relative_to(PACKAGE)}:{line} imports {module}"
    for path in (PACKAGE / "claims").glob("*.py"):
        for module, _, line in _imports(path):
            assert "figures" not in module.split("."), f"{path.relative_to(PACKAGE)}:{line} imports {module}"


def test_a_back_arrow_is_detected(tmp_path):
    """The check above can fail: a loop module importing the experiments layer is flagged."""
    bad = tmp_path / "fake.py"
    bad.write_text("from fedrepro.experiments.runner import build_run\n")
    (module, names, _), = list(_imports(bad))
    assert LAYERS[_part(module)] > LAYERS["sim"]


def test_an_in_function_back_arrow_is_detected(tmp_path):
    """An import deferred into a function is an arrow like any other: the claims layer reaching the paper
    registry from inside a function is flagged."""
    bad = tmp_path / "fake.py"
    bad.write_text("def checks(p):\n    from fedrepro.papers.registry import checks\n    return checks(p)\n")
    (module, names, line), = list(_imports(bad))
    assert (module, line) == ("fedrepro.papers.registry", 2) and LAYERS[_part(module)] > LAYERS["claims"]


def test_a_relative_back_arrow_is_detected(tmp_path):
    """A relative import is resolved against the file's module: ``from ..papers import registry`` in
    ``fedrepro.claims.fake`` names the papers layer."""
    bad = tmp_path / "fake.py"
    bad.write_text("def checks(p):\n    from ..papers import registry\n    return registry.checks(p)\n")
    (module, names, _), = list(_imports(bad, module="fedrepro.claims.fake"))
    assert (module, names) == ("fedrepro.papers", ["registry"]) and LAYERS[_part(module)] > LAYERS["claims"]


def test_the_layers_are_those_of_docs_architecture_md():
    """LAYERS is the order of the table under "The layers" in docs/architecture.md (a row is a layer; parts named
    in one row share it), so that the arrows checked here are the ones the documentation states."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    documented = {}
    for rank, cell in enumerate(rows):
        for name in re.findall(r"`([a-z_]+)(?:/[^`]*|\.py)`", cell):
            documented[name] = rank
    ours = {part: rank for part, rank in LAYERS.items() if part not in ("__init__", "schemas")}
    assert set(documented) == set(ours), (sorted(documented), sorted(ours))
    for a in ours:
        for b in ours:
            assert (ours[a] < ours[b]) == (documented[a] < documented[b]), (a, b, ours, documented)
