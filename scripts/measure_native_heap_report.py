"""The allocation sites whose live bytes grew between two points of a measure_native_heap.py run (memray).

Reads `<workdir>/daemon.bin` (memray's capture, native stacks) and `<workdir>/marks.json`, takes memray's
memory snapshots nearest to the marks at `--from` and `--to` requests answered, and prints: RSS and
the live heap memray tracked (every malloc, mmap and Python arena not yet freed) at both, then the
stacks whose live bytes grew most between them, in bytes per request.

    PYTHONPATH=daemon:var/memray .venv/bin/python scripts/measure_native_heap_report.py var/heap-long \\
        --from 600
"""

from __future__ import annotations

import argparse
import bisect
import json
from collections import defaultdict
from pathlib import Path

from memray import FileReader

SKIP = ("malloc", "calloc", "realloc", "memalign", "aligned_alloc", "posix_memalign", "operator new",
        "_PyMem_", "PyMem_", "PyObject_Malloc", "_PyObject_Malloc", "PyObject_Calloc", "mmap")  # fmt: skip


def mark(marks: list[dict], requests: int) -> dict:
    return min(marks, key=lambda m: abs(m["requests"] - requests))


def snapshot_index(times: list[int], ms: int) -> int:
    """The last snapshot taken at or before `ms`."""
    return max(0, bisect.bisect_right(times, ms) - 1)


def live_at(intervals, index: int) -> int:
    return sum(
        i.n_bytes
        for i in intervals
        if i.allocated_before_snapshot <= index
        and (i.deallocated_before_snapshot is None or i.deallocated_before_snapshot > index)
    )


def frame_text(frame) -> str:
    name, path, line = frame[0], frame[1], frame[2]
    return f"{name} ({Path(path).name}:{line})"


def site(record, depth: int) -> str:
    """The stack from the first frame that is not an allocator's, `depth` frames deep."""
    try:
        frames = record.hybrid_stack_trace()
    except AssertionError:  # memray cannot interleave some stacks (a thread it did not see start)
        frames = record.native_stack_trace() + record.stack_trace()
    while frames and any(s in str(frames[0][0]) for s in SKIP):
        frames = frames[1:]
    return " <- ".join(frame_text(f) for f in frames[:depth])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--from", dest="start", type=int, default=200, help="requests answered")
    parser.add_argument("--to", type=int, default=10**9, help="requests answered (default: the last mark)")
    parser.add_argument("--depth", type=int, default=8, help="frames per site")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    marks = json.loads((args.workdir / "marks.json").read_text())
    first, last = mark(marks, args.start), mark(marks, args.to)
    requests = last["requests"] - first["requests"]
    reader = FileReader(args.workdir / "daemon.bin")
    snapshots = list(reader.get_memory_snapshots())
    times = [s.time for s in snapshots]
    a, b = snapshot_index(times, first["ms"]), snapshot_index(times, last["ms"])
    print(f"{requests} requests ({first['requests']} -> {last['requests']}), snapshots {a} -> {b}")
    for label, s in (("from", snapshots[a]), ("to", snapshots[b])):
        print(f"  {label}: RSS {s.rss / 2**20:.2f} MiB, live heap {s.heap / 2**20:.2f} MiB")
    print(f"  RSS {(snapshots[b].rss - snapshots[a].rss) / requests:+.0f} B/request, live heap "
          f"{(snapshots[b].heap - snapshots[a].heap) / requests:+.0f} B/request")  # fmt: skip
    grown: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for record in reader.get_temporal_allocation_records(merge_threads=True):
        before, after = live_at(record.intervals, a), live_at(record.intervals, b)
        if before == after:
            continue
        entry = grown[site(record, args.depth)]
        entry[0] += before
        entry[1] += after
        entry[2] += sum(1 for i in record.intervals if a < i.allocated_before_snapshot <= b)
    total = sum(after - before for before, after, _ in grown.values())
    print(f"  sites that changed: {len(grown)}, net {total / requests:+.0f} B/request")
    ranked = sorted(grown.items(), key=lambda kv: kv[1][1] - kv[1][0], reverse=True)
    for stack, (before, after, _) in ranked[: args.top]:
        print(f"{(after - before) / requests:+9.1f} B/request  {before:>10} -> {after:>10} B  {stack}")
    print("shrank most:")
    for stack, (before, after, _) in ranked[-5:]:
        print(f"{(after - before) / requests:+9.1f} B/request  {before:>10} -> {after:>10} B  {stack}")


if __name__ == "__main__":
    main()
