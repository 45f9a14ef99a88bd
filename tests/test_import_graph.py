"""The module import graph of fedrepro has no circle (issue #45).

Every ``import`` / ``from ... import`` statement of every module under ``fedrepro/`` is an edge: at module level
and inside functions, classes, ``if`` and ``try`` blocks alike (an import inside a function hides a circle from
import time, not from the design), relative imports resolved against the module's package. ``from a.b import c``
is an edge to ``a.b`` and, when ``a.b.c`` is a module, to ``a.b.c``; an edge to the module's own package (or
one above it: ``from fedrepro.nn import kernels`` in ``fedrepro.nn.layers``) is left out, since a package is always
imported before its modules and such an edge says nothing. A circle is a strongly connected set of
two or more modules; the test names each with the import statements (file:line) that close it.

The layer order of docs/architecture.md is checked on the same imports (in-function and relative ones included)
by ``tests/test_layout.py``, which resolves relative imports with :func:`resolve`.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import fedrepro

PACKAGE = Path(fedrepro.__file__).parent

# No exception: the last circle (experiments.cells <-> .config) went when cells.py was split (issue #45).
KNOWN_CIRCLES: set = set()


def module_name(path: Path, package_dir: Path = PACKAGE) -> str:
    """``fedrepro/claims/query.py`` -> ``fedrepro.claims.query``; a package's ``__init__.py`` is the package."""
    parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a ``from <level dots><name> import ...`` in ``module`` names (``level`` 0: ``name``)."""
    if not level:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(parts) - 1:
        raise ValueError(f"{module}: relative import {'.' * level}{name or ''} goes above the top package")
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(path: Path, modules: set[str], package_dir: Path = PACKAGE) -> list[tuple[str, int]]:
    """``[(module imported, line)]`` of every import statement in the file that names a module of ``modules``
    (each name reduced to the longest module it lies in: ``fedrepro.claims.verdicts.ALPHA`` ->
    ``fedrepro.claims.verdicts``), except the module itself and the packages it lies in."""
    own = module_name(path, package_dir)
    is_package = path.name == "__init__.py"
    out = []

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(own, is_package, node.level, node.module)
            names = [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        else:
            continue
        for name in names:
            target = known(name)
            if target is not None and target != own and not own.startswith(target + "."):
                out.append((target, node.lineno))
    return sorted(set(out))


def import_graph(package_dir: Path = PACKAGE) -> dict[str, dict[str, list[str]]]:
    """``{module: {module it imports: ["path:line", ...]}}`` over the package."""
    files = {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}
    graph: dict[str, dict[str, list[str]]] = {m: {} for m in files}
    for m, path in files.items():
        for target, line in imports(path, set(files), package_dir):
            graph[m].setdefault(target, []).append(f"{path.relative_to(package_dir.parent)}:{line}")
    return graph


def circles(graph: dict) -> list[list[str]]:
    """The strongly connected sets of two or more modules (Tarjan), each sorted, in a stable order."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def describe(circle: list[str], graph: dict) -> str:
    """The circle's modules and the import statements between them."""
    members = set(circle)
    edges = [f"    {a} -> {b} ({', '.join(where)})" for a in circle for b, where in sorted(graph[a].items())
             if b in members]
    return " <-> ".join(circle) + "\n" + "\n".join(edges)


def test_the_package_has_no_import_circle():
    graph = import_graph()
    found = [c for c in circles(graph) if frozenset(c) not in KNOWN_CIRCLES]
    assert not found, ("import circles (move what both sides need into a module that imports neither; "
                       "an import inside a function still counts):\n" + "\n".join(describe(c, graph) for c in found))


def test_the_known_circle_is_still_there():
    """KNOWN_CIRCLES excuses exactly the circles it names: once one is gone, its entry goes too."""
    present = {frozenset(c) for c in circles(import_graph())}
    stale = [sorted(c) for c in KNOWN_CIRCLES if c not in present]
    assert not stale, f"no longer a circle, remove it from KNOWN_CIRCLES: {stale}"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "fedrepro"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_circle_through_an_in_function_import_is_found(tmp_path):
    """The check can fail: b imports a only inside a function, and the circle is still named, with its lines."""
    root = _package(tmp_path, {
        "claims/__init__.py": "",
        "claims/a.py": "from fedrepro.claims.b import helper\n",
        "claims/b.py": "def helper():\n    from fedrepro.claims.a import thing\n    return thing\n",
        "claims/c.py": "from fedrepro.claims import a\n",
    })
    graph = import_graph(root)
    assert circles(graph) == [["fedrepro.claims.a", "fedrepro.claims.b"]]
    text = describe(["fedrepro.claims.a", "fedrepro.claims.b"], graph)
    assert "fedrepro/claims/b.py:2" in text and "fedrepro/claims/a.py:1" in text
    # `from fedrepro.claims import a`: an edge to the module a (not to c's own package)
    assert graph["fedrepro.claims.c"] == {"fedrepro.claims.a": ["fedrepro/claims/c.py:1"]}


def test_relative_imports_are_resolved(tmp_path):
    root = _package(tmp_path, {
        "papers/__init__.py": "from .registry import checks\n",
        "papers/registry.py": "def checks():\n    from . import alone\n    from ..claims.evaluate import x\n",
        "papers/alone.py": "def f():\n    from .registry import checks\n",
        "claims/__init__.py": "",
        "claims/evaluate.py": "x = 1\n",
    })
    graph = import_graph(root)
    assert set(graph["fedrepro.papers"]) == {"fedrepro.papers.registry"}
    # `from . import alone` names the module's own package too: only the edge to alone is kept
    assert set(graph["fedrepro.papers.registry"]) == {"fedrepro.papers.alone", "fedrepro.claims.evaluate"}
    assert circles(graph) == [["fedrepro.papers.alone", "fedrepro.papers.registry"]]
    assert resolve("fedrepro.papers.registry", False, 2, "claims") == "fedrepro.claims"
    assert resolve("fedrepro.papers", True, 1, "alone") == "fedrepro.papers.alone"
