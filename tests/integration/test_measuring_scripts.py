"""Every measuring script in scripts/ runs: the smallest settings, a tiny bundle, exit 0 and its figures
printed (docs quote these scripts; one that no longer runs is a broken instruction). Scripts that need
what no test machine has (the peers' venv and converted models) get their dry path: compare.py with our
engine alone and its message naming what is missing, the peers' workers' argument parsing.

Nothing here asserts a figure's value, only that the figures are there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
DAEMON = SCRIPTS.parent / "daemon"

# script -> (arguments, strings its output must contain); {bundle}, {base_bundle}, {wav}, {tmp} and
# {python} are filled in per test.
RUNS = {
    "bench_announcer.py": (
        ["--bundle", "{bundle}", "--count", "2", "--lookahead", "5", "--set", "engine.max_frames=6"],
        ["4 sentences: queued->first_audio", "2 queued: finished->next first_audio", "engine: mean_batch"],
    ),
    "bench_encoders.py": (["{wav}", "--rounds", "1"], ["| mp3 |", "| opus |", "| wav | ours |"]),
    "bench_loudness.py": (["--runs", "1"], ["| off |", "| on |"]),
    "bench_servers.py": (
        ["--bundle", "{bundle}", "--rounds", "1", "--set", "engine.max_frames=6"],
        ["wyoming   1 client(s): first audio median", "http pcm  4 client(s): first audio median"],
    ),
    "compare_loudness.py": (["--runs", "1"], ["| running-1s |"]),
    "compare_tsm.py": (["{wav}"], ["input: tone HNR", "audiostretchy-tdhs"]),
    "measure_cut_click.py": ([], ["| abrupt cut", "| daemon defaults"]),
    "measure_front_end_hop.py": (
        ["{bundle}", "--runs", "2"],
        ["worker killed -> next text read", "time to first audio (ms, median of"],
    ),
    "measure_pool_throughput.py": (
        ["--count", "2", "--repeat", "1", "--members", "2", "--bundle", "{bundle}"],
        ["2 member(s):", "announcements/s"],
    ),
    "measure_shared_subscriptions.py": (["--settle-s", "0.2"], ["1. ", "7. every member unsubscribed"]),
    "measure_snapcast.py": (["--runs", "1", "--source", "pipe"], ["pipe"]),
    "measure_voice_ttfa.py": (["{base_bundle}", "--runs", "2"], ["prefix_caching=off", "prefix_caching=on"]),
    "measure_native_heap.py": (
        ["--workdir", "{tmp}/native-heap", "--bundle", "{bundle}", "--rounds", "2"],
        ["10 requests, RSS"],
    ),
    "measure_tie_fallback_memory.py": (["topk"], ["tie, k 50:", "tie, batch 8:"]),
    "measure_tiny_threads.py": (
        ["{bundle}", "--rounds", "1", "--requests", "2"],
        ["| threads | CPU s |", "| 1 |"],
    ),
    "measure_tbb_task_pool.py": (
        ["--infers", "20"],
        ["20 infers (7 batch sizes)", "the inferring thread's pool holds"],
    ),
    "measure_talker_steps.py": (
        ["{bundle}", "9@0", "3@0+1@40", "--random", "10", "--repeat", "--set", "engine.num_kv_blocks=16"],
        ["loaded in", "3@0+1@40", "random step 10 (", "random step 20 ("],
    ),
    "soak.py": (
        [
            "--bundle",
            "{bundle}",
            "--announcements",
            "6",
            "--http",
            "2",
            "--wyoming",
            "1",
            "--rate",
            "2",
            "--flood",
            "10",
            "--settle-s",
            "1",
            "--warm-up",
            "2",
            "--sample-s",
            "1",
            "--max-frames",
            "6",
            "--small-memories",
            "--set",
            '{{"devices": {{"num_threads": 1}}}}',  # format()'s braces
        ],
        [
            '"slope_mb_per_1000"',
            '"slope_steady_mb_per_1000"',
            '"ids_with_other_than_one_terminal_event": 0',
            "flood of 10: drained in",
        ],
    ),
    "peers/compare.py": (
        [
            "--engines",
            "qwen3tts",
            "--bundle",
            "{bundle}",
            "--qwen3tts-python",
            "{python}",
            "--peers-dir",
            "{tmp}",
            "--rounds",
            "1",
            "--frames",
            "8",
            "--speaker",
            "",
        ],
        ["8 frames per run", "| qwen3tts |"],
    ),
}
# Scripts a test machine cannot run, and the test below that covers what it can.
DRY = {
    "compare_http_stacks.py": "a one-off comparison of two HTTP stacks (aiohttp is not installed)",
    "measure_native_heap_report.py": "reads memray's capture; memray is installed beside the venv, not in it",
    "peers/worker_vox.py": "test_the_peers_workers_parse_their_arguments",
    "peers/worker_qwentts.py": "test_the_peers_workers_parse_their_arguments",
    "peers/worker_qwen3tts.py": "run by peers/compare.py above",
    "peers/worker_protocol.py": "imported by every worker",
    "peers/qwentts_gguf.py": "needs the peers' venv (gguf, torch): test_compare_names_the_missing_peers",
    "peers/elf_weaken_version.py": "test_elf_weaken_version_marks_a_needed_version_weak",
    "hostile_matrix.py": "test_the_hostile_matrix_runs_clean_and_writes_its_summary",
}


def measuring_scripts() -> set[str]:
    names = {
        p.name
        for p in SCRIPTS.glob("*.py")
        if p.name.startswith(("bench_", "measure_", "compare_", "soak", "hostile_"))
    }
    return names | {f"peers/{p.name}" for p in (SCRIPTS / "peers").glob("*.py")}


def test_every_measuring_script_has_a_smoke_run_or_a_stated_dry_path():
    assert measuring_scripts() == set(RUNS) | set(DRY)
    assert not set(RUNS) & set(DRY)


def _run(arguments: list[str], timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(DAEMON), **(env or {})}
    return subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, timeout=timeout, env=environment
    )


@pytest.fixture(scope="module")
def fill(tiny_models, tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("scripts")
    seconds = np.arange(2 * 24000) / 24000
    tone = 0.3 * np.sin(2 * np.pi * 160 * seconds) * (1 + 0.5 * np.sin(2 * np.pi * 3 * seconds))
    soundfile.write(tmp / "speech.wav", tone.astype(np.float32), 24000)
    return {
        "bundle": str(tiny_models.bundle()),
        "base_bundle": str(tiny_models.bundle(variant="base")),
        "wav": str(tmp / "speech.wav"),
        "tmp": str(tmp),
        "python": sys.executable,
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_script_runs_and_prints_its_figures(name, fill):
    if name == "measure_snapcast.py" and not (shutil.which("snapserver") and shutil.which("snapclient")):
        pytest.fail("snapserver and snapclient are part of the test machine (scripts/setup.sh)")
    arguments, expected = RUNS[name]
    result = _run([str(SCRIPTS / name), *(a.format(**fill) for a in arguments)])
    assert result.returncode == 0, result.stderr[-3000:]
    missing = [text for text in expected if text not in result.stdout]
    assert not missing, f"{missing} not in:\n{result.stdout[-3000:]}"


MATRIX_ROWS = ["mqtt", "http", "lexicon", "says", "emergencies", "idle", "spool", "after"]


@pytest.mark.slow
def test_the_hostile_matrix_runs_clean_and_writes_its_summary(fill, tmp_path):
    """Every row at a small count against one live daemon: exit 0, one line per row, and the summary's
    shape. That a row can be found unclean is shown on made-up events (unit/bench/test_matrix_tally.py)."""
    counts = {"mqtt": 30, "http": 12, "lexicon": 2, "says": 6, "emergencies": 1, "idle": 20, "spool": 30}
    arguments = [f"--{row}={count}" for row, count in counts.items()]
    summary = tmp_path / "matrix.json"
    result = _run([str(SCRIPTS / "hostile_matrix.py"), "--bundle", fill["bundle"], "--max-frames", "8",
                   "--workdir", str(tmp_path / "work"), "--json", str(summary), *arguments])  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0] in MATRIX_ROWS]
    assert [line.split()[0] for line in lines] == MATRIX_ROWS and all(
        line.endswith(" clean") for line in lines
    )
    written = json.loads(summary.read_text())
    assert written["clean"] is True and [row["row"] for row in written["rows"]] == MATRIX_ROWS
    sent = {row["row"]: row["sent"] for row in written["rows"]}
    assert sent["mqtt"] == counts["mqtt"] and sent["says"] == counts["says"]
    assert sent["spool"] == counts["spool"] + 2  # and the two valid entries beside them
    for row in written["rows"]:
        assert row["answered"] + row["silent"] == row["sent"] and row["lost"] == row["doubled"] == 0, row
        assert row["tracebacks"] == 0 and row["failures"] == [], row
    assert "Traceback" not in (tmp_path / "work" / "daemon.log").read_text()


def test_compare_names_the_missing_peers(tmp_path):
    result = _run(
        [
            str(SCRIPTS / "peers" / "compare.py"),
            "--peers-dir",
            str(tmp_path),
            "--bundle",
            str(tmp_path / "no-bundle"),
            "--rounds",
            "1",
        ],
        timeout=120,
    )
    assert result.returncode != 0
    report = result.stdout + result.stderr
    assert "scripts/peers/setup.sh" in report and "vox:" in report and "qwentts:" in report


@pytest.mark.parametrize(
    ("worker", "package", "options"),
    [("worker_vox.py", "vox", "--model"), ("worker_qwentts.py", "qwentts_cpp", "--talker")],
)
def test_the_peers_workers_parse_their_arguments(worker, package, options, tmp_path):
    """The peers' packages live in their own venv: an empty stand-in lets the worker get to its parser."""
    (tmp_path / f"{package}.py").write_text("QwenLibrary = QwenTTS = None\n")
    code = textwrap.dedent(f"""
        import runpy, sys
        sys.path[:0] = [{str(tmp_path)!r}, {str(SCRIPTS / "peers")!r}]
        sys.argv = [{worker!r}, "--help"]
        runpy.run_path({str(SCRIPTS / "peers" / worker)!r}, run_name="__main__")
    """)
    result = _run(["-c", code], timeout=60)
    assert result.returncode == 0, result.stderr
    assert options in result.stdout and "--frames" in result.stdout and "--text" in result.stdout


def test_elf_weaken_version_marks_a_needed_version_weak(tmp_path):
    library = tmp_path / "libcopy.so"
    shutil.copy(Path(sys.executable).resolve(), library)  # any ELF64 that needs glibc versions
    needed = subprocess.run(["readelf", "-V", str(library)], capture_output=True, text=True).stdout
    version = next(
        v for v in ("GLIBC_2.3.4", "GLIBC_2.3", "GLIBC_2.2.5") if f"Name: {v}  Flags: none" in needed
    )
    result = _run([str(SCRIPTS / "peers" / "elf_weaken_version.py"), version, str(library)], timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(library), version, "weak"]
    after = subprocess.run(["readelf", "-V", str(library)], capture_output=True, text=True).stdout
    assert f"Name: {version}  Flags: WEAK" in after
