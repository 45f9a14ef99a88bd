"""Strict YAML I/O and the papers' files on disk.

:func:`read_yaml` reads a YAML document strictly (a duplicate key is an error naming the file, line and
column; YAML 1.2 numbers: ``5e-1`` is a float), :func:`deep_merge` merges configuration blocks,
:func:`config_hash` hashes JSON-able content. The papers are discovered here (:data:`PAPERS`: every
folder ``fedrepro/papers/<paper>/`` with an ``experiments.yaml``) because the experiments layer reads
them and may not import from ``fedrepro.papers`` (tests/test_layout.py); the paper registry
(:mod:`fedrepro.papers.registry`) re-exports them for the layers above.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path

import yaml

from fedrepro.core.params import ConfigError

PAPERS_DIR = Path(__file__).resolve().parents[1] / "papers"
PAPER_FILES = {"experiments": "experiments.yaml", "claims": "claims.yaml", "fidelity": "FIDELITY.md"}


def paper_file(paper: str, what: str, root: str | Path | None = None) -> Path:
    """A paper's own file (``what``: experiments, claims or fidelity) in its folder
    ``fedrepro/papers/<paper>/``: under ``root`` (a checkout) when given, else in this package."""
    folder = PAPERS_DIR / paper if root is None else Path(root) / "fedrepro" / "papers" / paper
    return folder / PAPER_FILES[what]


def discover_papers(folder: Path = PAPERS_DIR) -> tuple[str, ...]:
    """The paper keys: every sub-folder of ``folder`` (``fedrepro/papers/``) that holds an ``experiments.yaml``."""
    return tuple(sorted(p.name for p in Path(folder).iterdir() if (p / PAPER_FILES["experiments"]).is_file()))


PAPERS = discover_papers()
USER_PAPER = "custom"



class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML's safe loader (libyaml's C parser where PyYAML has it: the same documents, parsed about
    six times faster, measured on the paper files; every Snakemake job reads them), except that a key repeated in one
    mapping is an error (YAML says keys are unique; PyYAML would silently keep the last value)."""


def _strict_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":        # `<<: *anchor`: merged keys may be overridden
            continue
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise ConfigError(f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}: duplicate key "
                              f"{key!r} (first at line {seen[key] + 1}); keep one")
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)

# One stated rule for numbers: a plain scalar that is a YAML 1.2 float is a float. PyYAML follows
# YAML 1.1, which needs a dot and a signed exponent, so `5e-1` or `1.0e4` came through as strings
# (and failed in the runs, or entered a cell as text). Quoted scalars stay strings.
YAML12_FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+\Z")
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", YAML12_FLOAT, list("-+0123456789."))


def yaml12_numbers(value):
    """``value`` with every string that is a YAML 1.2 float literal read as that float (for values
    parsed outside :func:`read_yaml`, e.g. ``snakemake --config step_c=5e-1``)."""
    if isinstance(value, dict):
        return {k: yaml12_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [yaml12_numbers(v) for v in value]
    if isinstance(value, str) and YAML12_FLOAT.match(value.strip()):
        return float(value)
    return value


def read_yaml(path: str | Path):
    """The YAML document in ``path``; a syntax error or a duplicate key is a :class:`ConfigError`
    naming the file, the line and the column."""
    path = Path(path)
    try:
        with open(path) as fh:
            return yaml.load(fh, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: YAML syntax error: {err.problem or err.context}") from None


#: keys that name the kind of a block (a partition's ``method``, a problem's, mechanism's, attack's,
#: aggregator's ``name``): an override that changes one replaces the block instead of merging into it
KIND_KEYS = ("method", "name")


def _same_kind(base: dict, override: dict) -> bool:
    return all(key not in override or key not in base or override[key] == base[key] for key in KIND_KEYS)


def deep_merge(base: dict, override: dict) -> dict:
    """Recursively merge ``override`` into a copy of ``base`` (dicts merge, other values replace). A dict
    whose kind changes (``method`` or ``name`` differs: ``partition: {method: label_shards, k: 2}`` over
    ``{method: dirichlet, alpha: 0.3}``) replaces the base's block: the old kind's parameters would be
    stale keys of the new one."""
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and _same_kind(out[key], value):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def config_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_paper_fragment(paper: str, root: str | Path | None = ".") -> dict:
    """Read the paper's ``fedrepro/papers/<paper>/experiments.yaml`` (``{}`` when it has none yet)."""
    path = paper_file(paper, "experiments", root)
    if not path.exists():
        return {}
    return read_yaml(path) or {}

