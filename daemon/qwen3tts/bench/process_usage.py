"""What a process and its children hold, read from /proc, and how fast it grows per request.

For the soak (scripts/soak.py) and its short form in the suite: resident memory, open files and threads
of the daemon, the number of its descendant processes (the text front end's forkserver and workers)
and their resident memory, and the slope of RSS against requests answered: least squares (the soak's
figure over hundreds of samples) or the median of slopes between near samples (the suite's short form,
whose few points an allocator step would tilt).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessUsage:
    rss_kib: int
    fds: int
    threads: int
    children: int
    children_rss_kib: int


def usage(pid: int, proc: Path = PROC) -> ProcessUsage:
    """The process's usage now; OSError if it is gone."""
    rss, threads = _status(proc / str(pid))
    fds = len(os.listdir(proc / str(pid) / "fd"))
    children = descendants(pid, proc)
    children_rss = 0
    for child in children:
        try:
            children_rss += _status(proc / str(child))[0]
        except OSError:  # it ended between the two reads
            continue
    return ProcessUsage(rss, fds, threads, len(children), children_rss)


def descendants(pid: int, proc: Path = PROC) -> list[int]:
    """Every process below `pid` (children, their children, ...), from each task's `children` list."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in _listdir(proc / str(parent) / "task"):
            try:
                kids = [int(k) for k in (proc / str(parent) / "task" / task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def slope_per_1000(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of (requests answered, RSS in KiB) as MB per 1000 requests; 0.0 without a
    spread of requests to fit."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return 0.0
    slope_kib = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return slope_kib * 1024 * 1000 / 1e6


def median_slope_per_1000(points: list[tuple[int, float]], apart: int = 2) -> float:
    """Median of the slopes from each point to the one `apart` points later, as MB per 1000 requests;
    0.0 without two points that far apart with a spread of requests.

    For the suite's short form, a few dozen RSS samples of a real process: glibc takes memory in steps
    of a few hundred KB at once and the trim gives some back, so one step near either end tilts a
    least-squares fit by several MB per 1000 over 200 requests, and two or three in the middle move
    even the median of all pairwise slopes (Theil-Sen: every pair straddling a step sees it). Between
    near points a step is seen by only `apart` of the slopes, so the median ignores up to about
    len(points) / (2 * apart) of them; a leak raises every slope."""
    slopes = sorted(
        (y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in zip(points, points[apart:], strict=False) if x2 != x1
    )
    if not slopes:
        return 0.0
    middle = len(slopes) // 2
    slope_kib = slopes[middle] if len(slopes) % 2 else (slopes[middle - 1] + slopes[middle]) / 2
    return slope_kib * 1024 * 1000 / 1e6


def _status(task: Path) -> tuple[int, int]:
    """(VmRSS in KiB, Threads) from /proc/<pid>/status."""
    rss = threads = 0
    for line in (task / "status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []
