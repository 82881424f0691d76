"""Timers called in turn, round after round, so that a change in the machine's load hits every timer alike
and their ratios, taken per round, stay meaningful (the benchmarks' rule: ratios measured in one run)."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def time_in_rounds(
    timers: dict[str, Callable[[], object]], rounds: int, shuffle_seed: int | None = None
) -> dict[str, list[float]]:
    """Seconds per call of each timer, one sample per round; each timer is called once first, untimed
    (its first call allocates and repacks). With `shuffle_seed` each round calls them in a new order, so
    that no timer always runs right after the same one (its caches, its threads' wake-up)."""
    for timer in timers.values():
        timer()
    samples: dict[str, list[float]] = {name: [] for name in timers}
    order, shuffler = list(timers), random.Random(shuffle_seed)
    for _ in range(rounds):
        if shuffle_seed is not None:
            shuffler.shuffle(order)
        for name in order:
            started = time.perf_counter()
            timers[name]()
            samples[name].append(time.perf_counter() - started)
    return samples


def summarise(samples: dict[str, list[float]], weight_bytes: int, base: str = "plugin") -> dict:
    """Per timer: median ms, GB/s of weights read, and the median of its per-round ratio to `base`."""
    return {
        name: {
            "median_ms": 1e3 * statistics.median(values),
            "gb_per_s": weight_bytes / statistics.median(values) / 1e9,
            "ratio_to_plugin": statistics.median(v / p for v, p in zip(values, samples[base], strict=True)),
        }
        for name, values in samples.items()
    }


def table_rows(batches: dict) -> list[str]:
    """Markdown rows `| batch | path | ms | GB/s | ratio |` of summarise()'s results per batch size."""
    return [
        f"| {batch} | {name} | {v['median_ms']:.2f} | {v['gb_per_s']:.1f} | x{v['ratio_to_plugin']:.2f} |"
        for batch, paths in batches.items()
        for name, v in paths.items()
    ]


def emit(text: str, report: dict, json_path: Path | None) -> int:
    """A benchmark tool's ending: its table printed, its report written as JSON if asked; exit status 0."""
    print(text)
    if json_path:
        json_path.write_text(json.dumps(report, indent=2))
    return 0
