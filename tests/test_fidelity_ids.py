"""FIDELITY decision IDs (`SH-n`, `ZH-n`, `EPM-n`, `FR-n`, `AS-n`, `GO-n`): each is defined once, in the file its
prefix names (`SH` the root FIDELITY.md, the others `fedrepro/papers/<paper>/FIDELITY.md`, as the root's index
says), and every ID cited in the package, the workflow, the tests, the benchmarks, docs/ and the README is defined
there."""
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ID = re.compile(r"\b(?:SH|ZH|EPM|FR|AS|GO)-\d+[a-z]?\b")
ROW = re.compile(r"^\| ((?:SH|ZH|EPM|FR|AS|GO)-\d+[a-z]?) \|", re.M)
CITING = [("fedrepro", "*.py"), ("workflow", "*"), ("tests", "*.py"), ("benchmarks", "*"), (".", "Snakefile"),
          (".", "config.yaml"), (".", "README.md"), ("docs", "*.md")]
# where each prefix's rows live (the root FIDELITY.md's index table says the same)
HOME = {"SH": "FIDELITY.md", "ZH": "fedrepro/papers/fedadmm_zhou/FIDELITY.md",
        "EPM": "fedrepro/papers/fedepm/FIDELITY.md", "FR": "fedrepro/papers/frpg/FIDELITY.md",
        "AS": "fedrepro/papers/aspire/FIDELITY.md", "GO": "fedrepro/papers/fedadmm_gong/FIDELITY.md"}
FIDELITY_FILES = sorted(set(HOME.values()))


def defined_ids(text):
    return Counter(ROW.findall(text))


def cited_ids(root):
    cited = {}
    for folder, pattern in CITING:
        for path in sorted((root / folder).rglob(pattern) if folder != "." else root.glob(pattern)):
            if path.is_file() and path.suffix in {".py", ".yaml", ".smk", ".md", ".json", ""}:
                for found in ID.findall(path.read_text(encoding="utf-8", errors="replace")):
                    cited.setdefault(found, []).append(str(path.relative_to(root)))
    return cited


def test_every_cited_fidelity_id_is_defined_once():
    where = {f: defined_ids((ROOT / f).read_text(encoding="utf-8")) for f in FIDELITY_FILES}
    defined = sum(where.values(), Counter())
    assert len(defined) > 50                                    # the decision tables parsed
    assert [k for k, n in defined.items() if n > 1] == []
    misplaced = {k: f for f, ids in where.items() for k in ids if HOME[k.split("-")[0]] != f}
    assert misplaced == {}, f"IDs defined outside the file their prefix names: {misplaced}"
    assert all(where[HOME[prefix]] for prefix in HOME)          # every prefix's table was found
    cited = cited_ids(ROOT)
    assert {"ZH-11", "FR-13"} <= set(cited)                     # the scan reaches code and yaml
    missing = {k: v for k, v in cited.items() if k not in defined}
    assert missing == {}, f"IDs cited but not defined in their FIDELITY file: {missing}"


def test_the_root_index_names_each_prefix_file():
    index = (ROOT / "FIDELITY.md").read_text(encoding="utf-8")
    for prefix, f in HOME.items():
        assert (ROOT / f).is_file()
        if prefix != "SH":
            assert f"| `{prefix}-n` |" in index and f"[{f}]({f})" in index, prefix


def test_the_check_catches_an_undefined_id(tmp_path):
    (tmp_path / "fedrepro").mkdir()
    bad = "ZH" + "-99"                                          # spelled apart: this file is scanned too
    (tmp_path / "fedrepro" / "x.py").write_text(f"# see FIDELITY {bad} and EPM-7b\n")
    cited = cited_ids(tmp_path)
    assert set(cited) == {bad, "EPM-7b"}
    assert set(cited) - set(defined_ids("| ID | x |\n| EPM-7b | y |\n")) == {bad}


def test_fidelity_has_no_machine_paths():
    moved = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    moved = moved[:moved.index("\n## README: ")]              # the logs moved out of FIDELITY (the README's follow)
    text = "\n".join([*((ROOT / f).read_text(encoding="utf-8") for f in FIDELITY_FILES), moved])
    assert re.findall(r"(?<![\w.])/(?:work|tmp|home|Users|mnt)/\S*", text) == []
