"""The README's newcomer walkthrough ("add an algorithm / a problem / a dataset / a figure / a claim / a paper") stays true:
every folder, file and registry its table names exists, each row names one folder and one registration inside
it, and the paper folders are the papers the package knows.

The table lies between ``<!-- walkthrough:begin -->`` and ``<!-- walkthrough:end -->``; everything it names must exist.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = "<!-- walkthrough:begin -->", "<!-- walkthrough:end -->"
KINDS = ("an algorithm", "a problem", "a dataset", "a figure or table", "a claim", "a paper")
REGISTRY = re.compile(r"((?:`\w+`(?: / )?)+) (?:of|in) `([^`]+)`")


def _rows() -> dict[str, list[str]]:
    text = README.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README has no (or several) walkthrough tables"
    table = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip().splitlines()
    rows = {}
    for line in table[2:]:                                   # past the header and its rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 4, line
        rows[cells[0]] = cells[1:]
    return rows


def _papers() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "fedrepro" / "papers").glob("*/__init__.py"))


def _expand(path: str) -> list[str]:
    return [path.replace("<paper>", p) for p in _papers()] if "<paper>" in path else [path]


def _entries():
    """(id, kind, path, names): a path the table names, and the names it says are registered in it."""
    out = {}
    for kind, (folder, registration, goes) in _rows().items():
        paper_row = kind == "a paper"
        for cell in (folder, registration, goes):
            registered = {path: [n.strip("` ") for n in names.split("/")] for names, path in REGISTRY.findall(cell)}
            for token in re.findall(r"`([^`]+)`", cell):
                if paper_row and re.fullmatch(r"[\w.]+\.(?:py|yaml|md)", token):
                    token = f"fedrepro/papers/<paper>/{token}"       # the paper row lists its folder's files
                if "/" not in token:
                    continue                                          # a registry or class name, a config key
                if "<name>" in token:
                    token = token.rsplit("/", 1)[0] + "/"             # a new file: its folder must exist
                for path in _expand(token):
                    key = f"{kind}: {path}"
                    names = out.setdefault(key, (key, kind, path, []))[3]
                    names += [n for n in registered.get(token, []) if n not in names]
    return list(out.values())


ENTRIES = _entries()


def test_the_walkthrough_has_each_kind_with_one_folder_and_one_registration():
    rows = _rows()
    assert tuple(rows) == KINDS
    for kind, (folder, registration, _goes) in rows.items():
        folders = re.findall(r"`([^`]+)`", folder)
        assert len(folders) == 1 and folders[0].endswith("/"), (kind, folder)
        if kind == "a paper":
            assert registration.startswith("none"), registration
            continue
        paths = [t for t in re.findall(r"`([^`]+)`", registration) if "/" in t]
        assert len(paths) == 1, (kind, registration)                  # one registration ...
        assert paths[0].startswith(folders[0]), (kind, paths[0])      # ... inside the one folder
    assert len(ENTRIES) > 20                                           # the parse found the table's paths


def test_the_paper_folders_are_the_papers():
    from fedrepro.experiments.yamlio import PAPERS

    assert set(_papers()) == set(PAPERS)
    text = README.read_text(encoding="utf-8")
    keys = re.search(r"everything of one paper \(keys: `([^`]*)`", text).group(1).split()
    assert sorted(keys) == _papers()


@pytest.mark.parametrize("kind,path,names", [e[1:] for e in ENTRIES], ids=[e[0] for e in ENTRIES])
def test_each_named_path_and_registry_exists(kind, path, names):
    target = ROOT / path
    assert target.exists(), f"the README's walkthrough ({kind}) names {path}, which does not exist"
    if path.endswith("/"):
        assert target.is_dir(), path
    else:
        assert target.is_file() and target.stat().st_size > 0, path
    if names:
        source = target.read_text(encoding="utf-8")
        defined = [n for n in names
                   if re.search(rf"^(?:class\s+{n}\b|def\s+{n}\b|{n}\s*(?::[^=\n]*)?=)", source, re.M)]
        assert defined, f"the README's walkthrough ({kind}) says {' / '.join(names)} is in {path}; it is not"
