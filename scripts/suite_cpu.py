"""Where the test suite's CPU goes: a pytest plugin that records each test's CPU time, and its report.

On two cores the suite is bound by its CPU time, not by its waits (docs/benchmarks.md, "Three workers,
and where the time goes"), so `--durations`' wall times do not say what to make cheaper. This plugin
records, around every test (its fixtures' set-up and tear-down included), the CPU time of the pytest
process and of the child processes it has reaped (daemons, brokers, package builds: a child counts
once it has been waited for, so a module-scoped daemon is counted in the test that stops it):

    PYTHONPATH=scripts PYTEST_ADDOPTS="-p suite_cpu" ./scripts/test.sh
    .venv/bin/python scripts/suite_cpu.py [var/suite-cpu] [--top 25]

Each pytest process (each xdist worker, the packaging part) writes <dir>/<worker>-<pid>.json at its
end; QWEN3TTS_SUITE_CPU_DIR names <dir> (default var/suite-cpu). The report sums them by module.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import time
from pathlib import Path

import pytest

DIR_VARIABLE = "QWEN3TTS_SUITE_CPU_DIR"
DEFAULT_DIR = Path("var/suite-cpu")

_rows: list[tuple[str, float, float, float]] = []  # nodeid, own CPU s, reaped children's CPU s, wall s


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children = _cpu()
    started = time.monotonic()
    yield
    own_after, children_after = _cpu()
    _rows.append((item.nodeid, own_after - own, children_after - children, time.monotonic() - started))


def pytest_sessionfinish(session) -> None:
    if not _rows:  # the xdist controller runs no test itself
        return
    directory = Path(os.environ.get(DIR_VARIABLE) or DEFAULT_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = directory / f"{worker}-{os.getpid()}.json"
    path.write_text(json.dumps({"rows": _rows}), encoding="utf-8")


def report(directory: Path, top: int) -> str:
    rows = [row for path in sorted(directory.glob("*.json")) for row in json.loads(path.read_text())["rows"]]
    if not rows:
        raise SystemExit(f"suite_cpu.py: no records in {directory} (run the suite with -p suite_cpu first)")
    modules: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for nodeid, own, children, wall in rows:
        totals = modules[nodeid.split("::")[0]]
        for i, value in enumerate((own, children, wall, 1)):
            totals[i] += value
    everything = sum(own + children for _, own, children, _ in rows)
    lines = [
        f"{len(rows)} tests, {everything:.0f} s of CPU (own + reaped children), {len(modules)} modules",
        "",
    ]
    lines.append("| module | tests | CPU s | own | children | share | wall s |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    ranked = sorted(modules.items(), key=lambda item: -(item[1][0] + item[1][1]))
    for module, (own, children, wall, count) in ranked[:top]:
        cpu = own + children
        share = cpu / everything
        lines.append(
            f"| {module} | {count} | {cpu:.1f} | {own:.1f} | {children:.1f} | {share:.1%} | {wall:.1f} |"
        )
    lines += ["", "| test | CPU s | own | children | wall s |", "|---|---:|---:|---:|---:|"]
    for nodeid, own, children, wall in sorted(rows, key=lambda row: -(row[1] + row[2]))[:top]:
        lines.append(f"| {nodeid} | {own + children:.1f} | {own:.1f} | {children:.1f} | {wall:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--top", type=int, default=25, help="modules and tests listed (default 25)")
    args = parser.parse_args()
    print(report(args.directory, args.top))


if __name__ == "__main__":
    main()
