"""scripts/suite_cpu.py: a pytest session with the plugin records each test's CPU, its reaped children's
included, and the report sums them by module (docs/benchmarks.md quotes it for the suite's CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

# Burns CPU until its own CPU clock has advanced by the given seconds: CPU time, whatever the machine's
# speed or load.
BURN = """import sys, time
end = time.process_time() + float(sys.argv[1])
while time.process_time() < end:
    pass
"""


def test_the_plugin_counts_a_tests_children_and_the_report_ranks_modules_by_cpu(tmp_path: Path):
    (tmp_path / "burn.py").write_text(BURN)
    (tmp_path / "test_busy_child.py").write_text(
        textwrap.dedent(f"""
        import subprocess, sys
        def test_a_child_burns_cpu():
            subprocess.run([sys.executable, {str(tmp_path / "burn.py")!r}, "0.6"], check=True)
    """)
    )
    (tmp_path / "test_idle.py").write_text("def test_nothing():\n    assert True\n")
    records = tmp_path / "records"
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS), "QWEN3TTS_SUITE_CPU_DIR": str(records)}
    env.pop("PYTEST_XDIST_WORKER", None)  # the inner session is a plain one
    env.pop("PYTEST_ADDOPTS", None)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "suite_cpu", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]

    (record,) = records.glob("main-*.json")
    rows = {
        nodeid.split("::")[-1]: (own, children)
        for nodeid, own, children, _ in json.loads(record.read_text())["rows"]
    }
    assert set(rows) == {"test_a_child_burns_cpu", "test_nothing"}
    assert rows["test_a_child_burns_cpu"][1] >= 0.6  # the child's CPU, counted once it was reaped
    assert rows["test_nothing"][1] < 0.3

    report = subprocess.run(
        [sys.executable, str(SCRIPTS / "suite_cpu.py"), str(records), "--top", "5"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert report.startswith("2 tests, ")
    module_rows = [line for line in report.splitlines() if line.startswith("| test_")]
    assert module_rows[0].startswith("| test_busy_child.py | 1 |"), report  # the busiest module first
    assert module_rows[1].startswith("| test_idle.py | 1 |"), report


def test_the_report_says_when_nothing_was_recorded(tmp_path: Path):
    ran = subprocess.run(
        [sys.executable, str(SCRIPTS / "suite_cpu.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0
    assert "no records in" in ran.stderr
