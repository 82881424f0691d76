"""The soak's measures (bench/process_usage.py): a real process tree read from /proc, and the slope fit."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from qwen3tts.bench.process_usage import descendants, median_slope_per_1000, slope_per_1000, usage


def test_usage_counts_a_process_tree_with_its_grandchildren():
    script = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        while len(descendants(os.getpid())) < 2:  # the child, then its own child
            assert child.poll() is None
            time.sleep(0.01)
        found = usage(os.getpid())
        assert found.children >= 2 and found.children_rss_kib > 1000  # two Pythons
        assert found.rss_kib > 1000 and found.threads >= 1 and found.fds >= 3
    finally:
        for pid in descendants(child.pid):
            os.kill(pid, 9)
        child.kill()
        child.wait()


def test_the_slope_is_in_mb_per_1000_requests():
    kib_per_request = 13 * 1000 / 1024  # 13 KB a request, the leak of issue 37
    points = [(n, 400_000 + n * kib_per_request + (5 if n % 2 else -5)) for n in range(0, 500, 10)]
    assert slope_per_1000(points) == pytest.approx(13.0, rel=0.01)
    assert slope_per_1000([(n, 400_000.0) for n in range(10)]) == 0.0
    assert slope_per_1000([(5, 1.0)]) == 0.0 and slope_per_1000([(5, 1.0), (5, 9.0)]) == 0.0


def test_the_median_slope_sees_a_leak_through_allocator_steps():
    kib_per_request = 13 * 1000 / 1024
    leak = [(n, 400_000 + n * kib_per_request) for n in range(0, 200, 5)]
    assert median_slope_per_1000(leak) == pytest.approx(13.0, rel=0.01)
    trimmed = [(n, kib - (600 if n >= 100 else 0)) for n, kib in leak]  # a malloc_trim gives 600 KiB back
    assert median_slope_per_1000(trimmed) == pytest.approx(13.0, rel=0.01)


def test_the_median_slope_ignores_steps_that_a_fit_follows():
    """Three steps of about 500 KiB in 40 samples, as a clean daemon showed in the suite's short form
    (docs/benchmarks.md): least squares and Theil-Sen both read them as a leak."""
    flat = [(n, 400_000.0 + n * 0.8 + (4 if n % 2 else 0)) for n in range(0, 200, 5)]  # 0.8 KiB a request
    stepped = [(n, kib + 460 * (n >= 40) + 450 * (n >= 45) + 500 * (n >= 130)) for n, kib in flat]
    assert slope_per_1000(stepped) > 8.0
    pairs = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(stepped) for x2, y2 in stepped[i + 1 :]]
    assert sorted(pairs)[len(pairs) // 2] * 1.024 > 7.0  # Theil-Sen
    assert median_slope_per_1000(stepped) == pytest.approx(0.8 * 1.024, abs=0.5)
    assert median_slope_per_1000([(5, 1.0)]) == 0.0 and median_slope_per_1000([(5, 1.0), (5, 9.0)]) == 0.0
    assert median_slope_per_1000([(0, 1.0), (5, 9.0)]) == 0.0  # no two points `apart` apart
