"""The parameter reference, generated from the code's declared constraints.

Every algorithm, problem, partition, attack, privacy mechanism, aggregator, stop rule and metric, with
its parameters: the allowed values come from the declarations the code checks its input against
(:mod:`fedrepro.core.params`: an algorithm's ``constraints``, a problem builder's ``@problem_spec``, an
attack's, aggregator's or mechanism's ``constraints``, :data:`fedrepro.sim.stopping.STOP_KEYS`; a
partition rule's signature), and the defaults from the code itself (dataclass fields, a partition rule's
signature, an aggregator's ``defaults``, and the literal fallbacks ``spec.get("key", default)`` or
``{"key": default, **spec}`` in the builder's source). Nothing here is a hand-written copy.

``fedrepro list --params [NAME]`` prints it; ``python -m fedrepro.experiments.reference docs/parameters.md``
writes the page (``--check``: exit 1 when the page is stale).
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import sys
import textwrap
from pathlib import Path

from fedrepro.core.params import Interval, Options, _Anything, _Boolean, describe
from numbers import Integral

KINDS = ("algorithm", "problem", "partition", "attack", "mechanism", "aggregator", "stop rule", "metric")
NO_DEFAULT = "—"
_MISSING = object()


# ------------------------------------------------------------------------------ from declarations
def type_of(allowed: list) -> str:
    """A short type name of a constraint list (``int``, ``float``, ``str``, ``bool``, ``any``; ``| None``)."""
    names = []
    for c in allowed:
        if c is None:
            t = "None"
        elif isinstance(c, Interval):
            t = "int" if c.kind is Integral else "float"
        elif isinstance(c, _Boolean):
            t = "bool"
        elif isinstance(c, Options):
            vals = c.values
            t = "str" if vals and all(isinstance(v, str) for v in vals) else "float" if vals and all(
                isinstance(v, float) for v in vals) else "value"
        elif isinstance(c, _Anything):
            t = "any"
        else:
            t = type(c).__name__
        if t not in names:
            names.append(t)
    if "None" in names and len(names) > 1:
        names = [n for n in names if n != "None"] + ["None"]
    return " | ".join(names)


def _source_defaults(*functions, _seen=None, _depth=0) -> dict:
    """Literal defaults in the source of ``functions``: ``X.get("key", literal)`` (X: ``spec``, ``params``
    or an attribute ``.spec`` / ``.params``) and ``{"key": literal, ..., **spec}``, following the module
    functions they hand ``spec`` to (two calls deep)."""
    found = {}
    seen = set() if _seen is None else _seen
    for fn in functions:
        if fn is None:
            continue
        fn = inspect.unwrap(fn)
        if fn in seen:
            continue
        seen.add(fn)
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if (_depth < 2 and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and any(isinstance(a, ast.Name) and a.id == "spec" for a in node.args)):
                callee = getattr(fn, "__globals__", {}).get(node.func.id)
                if inspect.isfunction(callee):
                    for k, v in _source_defaults(callee, _seen=seen, _depth=_depth + 1).items():
                        found.setdefault(k, v)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                owner = node.func.value
                name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else None
                if name in ("spec", "params"):
                    try:
                        found.setdefault(node.args[0].value, ast.literal_eval(node.args[1]))
                    except ValueError:
                        pass
            elif isinstance(node, ast.Dict) and any(k is None and isinstance(v, ast.Name) and v.id == "spec"
                                                    for k, v in zip(node.keys, node.values)):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        try:
                            found.setdefault(k.value, ast.literal_eval(v))
                        except ValueError:
                            pass
    return found


def _dataclass_defaults(cls) -> dict:
    out = {}
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
    return out


def _rows(constraints: dict, defaults: dict) -> list[dict]:
    return [{"name": k, "type": type_of(allowed), "allowed": describe(allowed),
             "default": defaults.get(k, _MISSING)} for k, allowed in constraints.items()]


def _entry(kind: str, name: str, params: list[dict], note: str = "") -> dict:
    return {"kind": kind, "name": name, "params": params, "note": note}


def _algorithms() -> list[dict]:
    from fedrepro.algorithms import algorithm_class, algorithm_names
    out = []
    for name in algorithm_names():
        cls = algorithm_class(name)
        doc = (inspect.getdoc(cls) or "").split("\n")[0]
        doc = "" if doc.startswith("Parameters") else doc
        out.append(_entry("algorithm", name, _rows(cls.parameter_constraints(), _dataclass_defaults(cls)), doc))
    return out


def _problems() -> list[dict]:
    from fedrepro.problems import _builder, problem_names
    out = []
    for name in problem_names():
        b = _builder(name)
        cons = getattr(b, "spec_constraints", None)
        if cons is None:
            out.append(_entry("problem", name, [], "declares no constraints"))
            continue
        defaults = _source_defaults(b, getattr(b, "spec_check", None))
        out.append(_entry("problem", name, _rows(cons, defaults)))
    return out


def _partitions() -> list[dict]:
    from fedrepro.data import partition
    out = []
    for name, fn in partition.PARTITIONERS.items():
        sig = inspect.signature(fn)
        data_arg = next(iter(sig.parameters))
        rows = []
        for p, par in sig.parameters.items():
            if p in (data_arg, "seed"):
                continue
            ann = par.annotation
            t = "any" if ann is inspect.Parameter.empty else (ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)))
            rows.append({"name": p, "type": t, "allowed": "(checked by the rule)",
                         "default": _MISSING if par.default is inspect.Parameter.empty else par.default})
        out.append(_entry("partition", name, rows, f"partitions {data_arg}"))
    return out


def _attacks() -> list[dict]:
    from fedrepro.sim.attacks import _WORKERS, ATTACKS
    out = []
    for name, cls in sorted(ATTACKS.items()):
        defaults = {"B": cls.default_B, **_source_defaults(*[m for k, m in inspect.getmembers(cls, inspect.isfunction)])}
        out.append(_entry("attack", name, _rows({**_WORKERS, **cls.constraints}, defaults), f"acts on {cls.acts_on}"))
    return out


def _mechanisms() -> list[dict]:
    import typing
    from fedrepro.sim.privacy import MECHANISMS
    out = []
    for name, builder in sorted(MECHANISMS.items()):
        cons = getattr(builder, "constraints", None)
        cls = typing.get_type_hints(builder).get("return")
        if cons is None:
            cons = getattr(cls, "constraints", {})
        defaults = {**_dataclass_defaults(cls), **_source_defaults(builder)}
        out.append(_entry("mechanism", name, _rows(cons, defaults)))
    return out


def _aggregators() -> list[dict]:
    from fedrepro.sim.aggregation import AGGREGATORS
    out = []
    for name, cls in sorted(AGGREGATORS.items()):
        defaults = {**_source_defaults(*[m for k, m in inspect.getmembers(cls, inspect.isfunction)]), **cls.defaults}
        out.append(_entry("aggregator", name, _rows(cls.constraints, defaults)))
    return out


def _stop_rules() -> list[dict]:
    from fedrepro.sim.stopping import STOP_KEYS, STOP_RULES
    return [_entry("stop rule", name, _rows(STOP_KEYS.get(name, {}), _source_defaults(fn)))
            for name, fn in sorted(STOP_RULES.items())]


def _metrics() -> list[dict]:
    from fedrepro.problems import problem_class, problem_names
    by_metric: dict[str, list[str]] = {}
    for p in problem_names():
        cls = problem_class(p)
        for m in getattr(cls, "METRIC_CATALOGUE", ()) if cls is not None else ():
            by_metric.setdefault(m, []).append(p)
    return [_entry("metric", m, [], "evaluated by problems: " + ", ".join(ps)) for m, ps in sorted(by_metric.items())]


def reference() -> list[dict]:
    """Every entry: ``{"kind", "name", "params": [{"name", "type", "allowed", "default"}], "note"}``."""
    return (_algorithms() + _problems() + _partitions() + _attacks() + _mechanisms() + _aggregators()
            + _stop_rules() + _metrics())


def lookup(name: str, entries: list[dict] | None = None) -> list[dict]:
    """The entries called ``name`` (a name may be an attack and a mechanism); ValueError listing close
    names when there is none."""
    entries = reference() if entries is None else entries
    hits = [e for e in entries if e["name"] == name]
    if not hits:
        names = sorted({e["name"] for e in entries})
        close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"no algorithm, problem, partition, attack, mechanism, aggregator, stop rule or metric "
                         f"called {name!r}{hint} (`fedrepro list` names them all)")
    return hits


# ------------------------------------------------------------------------------ rendering
def _fmt_default(v) -> str:
    return NO_DEFAULT if v is _MISSING else f"`{v!r}`"


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def entry_markdown(e: dict) -> str:
    lines = [f"### {e['kind']} `{e['name']}`", ""]
    if e["note"]:
        lines += [_cell(e["note"]), ""]
    if e["params"]:
        lines += ["| parameter | type | allowed | default |", "|---|---|---|---|"]
        lines += [f"| `{p['name']}` | {_cell(p['type'])} | {_cell(p['allowed'])} | {_cell(_fmt_default(p['default']))} |"
                  for p in e["params"]]
    elif e["kind"] != "metric":
        lines.append("No parameters.")
    return "\n".join(lines) + "\n"


def entry_text(e: dict) -> str:
    head = f"{e['kind']} {e['name']}" + (f"  ({e['note']})" if e["note"] else "")
    if not e["params"]:
        return head + ("" if e["kind"] == "metric" else "\n  no parameters") + "\n"
    rows = [("parameter", "type", "default", "allowed")] + [
        (p["name"], p["type"], NO_DEFAULT if p["default"] is _MISSING else repr(p["default"]), p["allowed"])
        for p in e["params"]]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return head + "\n" + "\n".join("  " + "  ".join(r[i].ljust(w[i]) for i in range(3)) + "  " + r[3]
                                   for r in rows) + "\n"


def page() -> str:
    entries = reference()
    out = ["# Parameter reference", "",
           "Generated from the code's declared constraints by `python -m fedrepro.experiments.reference "
           "docs/parameters.md`; do not edit by hand (`tests/test_parameter_reference.py` fails when it is stale). "
           "The same tables print with `fedrepro list --params NAME`.", "",
           "*allowed*: what the code accepts (a value is valid when it satisfies one of the alternatives); "
           f"*default*: the value the code uses when the key is absent ({NO_DEFAULT}: none, the key is required or "
           "the code derives it, e.g. from the problem). Partition rules declare their parameters by signature; "
           "their ranges are checked inside the rule.", ""]
    for kind in KINDS:
        group = [e for e in entries if e["kind"] == kind]
        out += [f"## {kind}s", ""]
        if kind == "metric":
            out += ["| metric | evaluated by |", "|---|---|"]
            out += [f"| `{e['name']}` | {e['note'].split(': ', 1)[1]} |" for e in group]
            out.append("")
            continue
        out += [entry_markdown(e) for e in group]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedrepro.experiments.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", default="docs/parameters.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when the page differs from the code's declarations")
    args = ap.parse_args(argv)
    text, path = page(), Path(args.path)
    if args.check:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is stale; regenerate with `python -m fedrepro.experiments.reference {path}`", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
