"""What oneTBB keeps per thread: the 256-byte objects of tbbmalloc's slab blocks, by owning thread.

oneTBB allocates its task objects (and the proxies of tasks spawned with an affinity slot) from a
per-thread pool of 256-byte objects that it never gives back while the thread lives: the pool is as large
as the most such objects the thread ever had outstanding at once. The objects come from tbbmalloc (which
OpenVINO loads), in 16 KiB slab blocks inside 1 MiB regions that tbbmalloc maps itself; this reads those
regions out of a live process (/proc/<pid>/maps and /proc/<pid>/mem, oneTBB 2021.x's layouts) and counts
the blocks of 256-byte objects and who owns them:

    .venv/bin/python scripts/measure_tbb_task_pool.py --pid 12345          # a running daemon

With no --pid it measures itself: one thread runs `--infers` inferences of a small dynamic-shape graph
(a chain of 40 MatMuls, the batch cycling through `--distinct` sizes) on the CPU plugin, beside `--hogs`
busy processes that compete for the cores, then prints what that thread's pool holds. It is the control,
not a reproduction: on the 2-vCPU machine of docs/benchmarks.md ("The long soak") it left 56-439 objects
whatever the hogs and sizes, where the daemon's engine thread held 7,000-95,000.

    PYTHONPATH=daemon .venv/bin/python scripts/measure_tbb_task_pool.py --infers 5000 --hogs 3
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import struct
import threading
import time

REGION_HEAD = struct.Struct("<QQQQI")  # MemRegion: next, prev, allocSz, blockSz, type
BLOCK = 16 * 1024
MIB = 1 << 20


def _anonymous_rw(pid: int) -> list[tuple[int, int]]:
    spans = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if fields[1].startswith("rw") and len(fields) == 5:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                spans.append((start, end))
    return spans


def _looks_like_region(head: bytes) -> bool:
    nxt, prv, alloc, block_size, kind = REGION_HEAD.unpack(head)
    return (kind in (0, 1, 2) and alloc % 4096 == 0 and 64 * 1024 <= alloc <= 64 * MIB
            and block_size < alloc and nxt % 4096 == 0 and prv % 4096 == 0 and (nxt or prv))  # fmt: skip


def tbb_regions(pid: int, mem) -> list[tuple[int, int, int]]:
    """tbbmalloc's regions (start, size, kind) of process `pid`, found by walking their list."""
    start = None
    for low, _ in _anonymous_rw(pid):
        mem.seek(low)
        if _looks_like_region(mem.read(REGION_HEAD.size)):
            start = low
            break
    if start is None:
        return []
    seen, here = set(), start
    while here and here not in seen:  # back to the head of the list
        seen.add(here)
        mem.seek(here)
        _, prv, *_ = REGION_HEAD.unpack(mem.read(REGION_HEAD.size))
        if not prv:
            break
        here = prv
    regions, seen = [], set()
    while here and here not in seen:
        seen.add(here)
        mem.seek(here)
        nxt, _, alloc, _, kind = REGION_HEAD.unpack(mem.read(REGION_HEAD.size))
        regions.append((here, alloc, kind))
        here = nxt
    return regions


def tally(pid: int) -> dict:
    """Slab blocks of 256-byte objects per owning thread (pthread_t), and the regions' total size."""
    owners: collections.Counter = collections.Counter()
    objects: collections.Counter = collections.Counter()
    with open(f"/proc/{pid}/mem", "rb") as mem:
        regions = tbb_regions(pid, mem)
        for base, alloc, kind in regions:
            if kind != 0:  # slab blocks only
                continue
            block = (base + 64 + BLOCK - 1) & ~(BLOCK - 1)
            while block + BLOCK <= base + alloc:
                mem.seek(block + 96)  # tlsPtr, ownerTid, backRefIdx, allocatedCount, objectSize
                _, owner, _ = struct.unpack("<QQQ", mem.read(24))
                count, size = struct.unpack("<HH", mem.read(4))
                if size == 256:
                    owners[owner] += 1
                    objects[owner] += count
                block += BLOCK
    return {"regions_mib": sum(a for _, a, _ in regions) / MIB, "blocks": owners, "objects": objects}


def _hog() -> None:
    while True:
        pass


def _dynamic_model(layers: int = 40, width: int = 64):
    import numpy as np
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([-1, width], ov.Type.f32, name="x")
    rng = np.random.default_rng(0)
    node = x
    for _ in range(layers):
        node = ops.relu(ops.matmul(node, ops.constant(rng.standard_normal((width, width)).astype("f4") * 0.1),
                                   False, False))  # fmt: skip
    return ov.Model([node], [x], "chain")


def run_infers(infers: int, threads: int | None, distinct: int) -> dict:
    """`infers` inferences in a new thread, the batch cycling through `distinct` sizes; that thread's pool
    at the end."""
    import numpy as np
    import openvino as ov

    config = {"INFERENCE_NUM_THREADS": threads} if threads else {}
    compiled = ov.Core().compile_model(_dynamic_model(), "CPU", config)
    result: dict = {}

    def work() -> None:
        request = compiled.create_infer_request()
        for n in range(infers):
            request.infer({"x": np.ones((1 + n % distinct, 64), dtype="f4")})
        result["ident"] = threading.get_ident()
        result["after"] = tally(os.getpid())

    thread = threading.Thread(target=work)
    started = time.monotonic()
    thread.start()
    thread.join()
    result["seconds"] = time.monotonic() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pid", type=int, help="read this process; default: run the experiment")
    parser.add_argument("--infers", type=int, default=20000)
    parser.add_argument("--hogs", type=int, default=0, help="busy processes beside the inferring thread")
    parser.add_argument("--threads", type=int, help="INFERENCE_NUM_THREADS for the graph")
    parser.add_argument("--distinct", type=int, default=7, help="batch sizes the infers cycle through")
    args = parser.parse_args()
    if args.pid:
        found = tally(args.pid)
        print(f"tbbmalloc regions {found['regions_mib']:.1f} MiB")
        for owner, blocks in found["blocks"].most_common():
            print(f"thread {owner:#x}: {blocks} blocks of 256-byte objects ({blocks * BLOCK / MIB:.2f} MiB),"
                  f" {found['objects'][owner]} objects allocated")  # fmt: skip
        return
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    try:
        result = run_infers(args.infers, args.threads, args.distinct)
    finally:
        for hog in hogs:
            hog.terminate()
    mine = result["after"]
    blocks, objects = mine["blocks"][result["ident"]], mine["objects"][result["ident"]]
    print(f"{args.infers} infers ({args.distinct} batch sizes) in {result['seconds']:.1f} s"
          f" beside {args.hogs} busy processes"
          f" (INFERENCE_NUM_THREADS {args.threads or 'default'}): the inferring thread's pool holds"
          f" {objects} objects of 256 bytes in {blocks} blocks ({blocks * BLOCK / MIB:.2f} MiB);"
          f" tbbmalloc's regions {mine['regions_mib']:.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
