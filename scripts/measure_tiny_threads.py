"""CPU and wall time of the tiny bundle's synthesis on one inference thread against every core.

A `qwen3tts tiny` bundle's graphs are a few MB: too small to split between threads. The loader runs it
on one thread unless devices.num_threads names a number (runtime/devices.py `threads_for`); this measures
why, with the loader as a daemon uses it, alternating the thread counts round by round:

    PYTHONPATH=daemon .venv/bin/python scripts/measure_tiny_threads.py BUNDLE [--rounds 5] [--requests 40]

Each round loads the bundle at each thread count and runs `--requests` greedy requests, two at a time,
of up to 30 frames; prints the median CPU seconds (this process: every OpenVINO thread) and wall seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from pathlib import Path

from qwen3tts.engine.sequence import Request
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

TEXT = "The train to Berlin leaves from platform four."


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(bundle: Path, threads: int, requests: int) -> tuple[float, float]:
    """(CPU s, wall s) of `requests` requests, two per batch, on a runtime loaded with `threads`."""
    overrides = [f"devices.num_threads={threads}", "engine.max_frames=30", "engine.temperature=0"]
    engine = load_runtime(bundle, load_settings(None, overrides)).engine
    cpu, started = _cpu(), time.monotonic()
    for n in range(0, requests, 2):
        for k in (n, n + 1):
            engine.submit(Request(id=f"r{k}", text=TEXT, speaker="vivian", greedy=True, max_frames=30))
        while engine.step():
            pass
    return _cpu() - cpu, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    counts = (1, len(os.sched_getaffinity(0)))
    results: dict[int, list[tuple[float, float]]] = {n: [] for n in counts}
    for _ in range(args.rounds):
        for threads in counts:
            results[threads].append(run(args.bundle, threads, args.requests))
    print(f"{args.requests} requests per run, medians of {args.rounds} runs")
    print("| threads | CPU s | wall s |")
    print("|---:|---:|---:|")
    for threads, rows in results.items():
        cpu, wall = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"| {threads} | {cpu:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    main()
