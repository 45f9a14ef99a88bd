"""A rule script that fails leaves its traceback in the log file Snakemake points to (issue #14, 4)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run_rule_script(log: Path, body: str) -> subprocess.CompletedProcess:
    """Run ``body`` inside ``_common.logged`` of a stand-in Snakemake object whose log is ``log``."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "workflow" / "scripts")!r})
        from _common import logged

        class Snakemake:
            log = [{str(log)!r}]

        with logged(Snakemake()):
    """) + textwrap.indent(textwrap.dedent(body), "    ")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


def test_a_failing_rule_script_writes_its_traceback_to_the_rule_log(tmp_path):
    log = tmp_path / "logs" / "rule.log"
    done = _run_rule_script(log, """
        print("starting the job")
        raise ValueError("bad cell: k0=0")
    """)
    assert done.returncode != 0
    text = log.read_text()
    assert "starting the job" in text
    assert "Traceback (most recent call last)" in text and "ValueError: bad cell: k0=0" in text


def test_a_successful_rule_script_logs_only_its_output(tmp_path):
    log = tmp_path / "rule.log"
    assert _run_rule_script(log, 'print("done")\n').returncode == 0
    assert log.read_text() == "done\n"


def test_a_snakemake_job_appends_its_profile_record(tmp_path):
    """A job (an object with ``rule`` and ``output``, as Snakemake's) appends one line with its wall and
    CPU time and peak memory to logs/profile/<rule>.jsonl of its working directory."""
    import json

    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "workflow" / "scripts")!r})
        from _common import logged

        class Snakemake:
            rule = "aggregate"
            log = ["rule.log"]
            output = ["out.parquet"]

        with logged(Snakemake()):
            sum(i * i for i in range(200_000))
    """)
    for _ in range(2):
        assert subprocess.run([sys.executable, "-c", script], cwd=tmp_path).returncode == 0
    lines = [json.loads(x) for x in (tmp_path / "logs/profile/aggregate.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    for rec in lines:
        assert rec["rule"] == "aggregate" and rec["output"] == "out.parquet" and rec["status"] == "ok"
        assert 0 < rec["startup_cpu_s"] <= rec["cpu_s"] and 0 < rec["startup_wall_s"] <= rec["wall_s"]
        assert 0 <= rec["sys_s"] < rec["cpu_s"]                     # the kernel's share of the job's CPU time
        assert 5 < rec["max_rss_mb"] < 2000


def test_a_checksum_mismatch_reaches_the_user_as_a_message_not_a_traceback(tmp_path):
    """Issue #44: a checksum mismatch found by the fetch job reached the user inside a Python traceback;
    now stderr carries the message (file, expected and actual sha256, the fix) and the log path, and the
    log keeps the traceback."""
    log = tmp_path / "fetch.log"
    done = _run_rule_script(log, """
        from fedrepro.data.fetch import ChecksumError
        raise ChecksumError("data/raw/adult/adult.data", "ab" * 32, "cd" * 32)
    """)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert "checksum mismatch" in done.stderr and "adult.data" in done.stderr and str(log) in done.stderr
    assert "Traceback (most recent call last)" in log.read_text()
