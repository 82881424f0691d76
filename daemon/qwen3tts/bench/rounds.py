"""Timers called in turn, round after round, so that a change in the machine's load hits every timer alike
and their ratios, taken per round, stay meaningful (the benchmarks' rule: ratios measured in one run)."""

from __future__ import annotations

import time
from collections.abc import Callable


def time_in_rounds(timers: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each timer, one sample per round; each timer is called once first, untimed
    (its first call allocates and repacks)."""
    for timer in timers.values():
        timer()
    samples: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            started = time.perf_counter()
            timer()
            samples[name].append(time.perf_counter() - started)
    return samples
