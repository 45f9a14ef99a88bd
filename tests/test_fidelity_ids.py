"""FIDELITY.md decision IDs (`SH-n`, `ZH-n`, `EPM-n`, `FR-n`, `AS-n`, `GO-n`): each is defined once, and every ID
cited in the package, the workflow, the tests and the benchmarks is defined there."""
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ID = re.compile(r"\b(?:SH|ZH|EPM|FR|AS|GO)-\d+[a-z]?\b")
ROW = re.compile(r"^\| ((?:SH|ZH|EPM|FR|AS|GO)-\d+[a-z]?) \|", re.M)
CITING = [("fedrepro", "*.py"), ("workflow", "*"), ("tests", "*.py"), ("benchmarks", "*"), (".", "Snakefile"),
          (".", "config.yaml"), (".", "README.md")]


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
    defined = defined_ids((ROOT / "FIDELITY.md").read_text(encoding="utf-8"))
    assert len(defined) > 50                                    # the four decision tables parsed
    assert [k for k, n in defined.items() if n > 1] == []
    cited = cited_ids(ROOT)
    assert {"ZH-11", "FR-13"} <= set(cited)                     # the scan reaches code and yaml
    missing = {k: v for k, v in cited.items() if k not in defined}
    assert missing == {}, f"IDs cited but not defined in FIDELITY.md: {missing}"


def test_the_check_catches_an_undefined_id(tmp_path):
    (tmp_path / "fedrepro").mkdir()
    bad = "ZH" + "-99"                                          # spelled apart: this file is scanned too
    (tmp_path / "fedrepro" / "x.py").write_text(f"# see FIDELITY {bad} and EPM-7b\n")
    cited = cited_ids(tmp_path)
    assert set(cited) == {bad, "EPM-7b"}
    assert set(cited) - set(defined_ids("| ID | x |\n| EPM-7b | y |\n")) == {bad}


def test_fidelity_has_no_machine_paths():
    text = (ROOT / "FIDELITY.md").read_text(encoding="utf-8")
    assert re.findall(r"(?<![\w.])/(?:work|tmp|home|Users|mnt)/\S*", text) == []
