"""What the plugin's paged talker keeps after steps of each kind: the memory behind runtime/talker_reserve.py
and paged_talker.py's PAD_TO (docs/benchmarks.md, "The talker's memory under traffic").

Loads a bundle as the daemon does (its talker reservation on, or off with --no-reserve: the load's one
warm-up position only; padding off with --no-padding), then runs talker steps on the runner's own request
and prints, after each, the process's anonymous and file-backed RSS and glibc's live bytes (mallinfo2),
as changes from the level after load (after gc and malloc_trim). A step is `new@past` per sequence
joined by `+`, e.g. `64@0` or `253@256+1@991`; each sequence gets blocks of its own from block 0 on, so
KV pages a step writes to for the first time count in the anonymous RSS too. `--random N` runs N steps
the engine could make (up to 4 sequences, 256 new positions, prompt pasts up to 256, decode pasts up to
the cache's share), seeded, and prints every 10th; `--repeat` runs the same steps again after them.

    PYTHONPATH=daemon .venv/bin/python scripts/measure_talker_steps.py var/bundle-0.6b-int8 8@0 64@0 128@0
    PYTHONPATH=daemon .venv/bin/python scripts/measure_talker_steps.py var/bundle-0.6b-int8 --random 120
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import random
import time
from pathlib import Path

import numpy as np

from qwen3tts.runtime import ov_runner, paged_talker
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

_libc = ctypes.CDLL("libc.so.6")


class _MallInfo2(ctypes.Structure):
    _FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    _fields_ = [(name, ctypes.c_size_t) for name in (*_FIELDS, "keepcost")]


_libc.mallinfo2.restype = _MallInfo2


def memory() -> tuple[float, float, float]:
    """(anonymous RSS, file RSS, glibc live) in MiB, after a collection and a trim."""
    gc.collect()
    _libc.malloc_trim(0)
    lines = Path("/proc/self/status").read_text().splitlines()
    status = {line.split(":")[0]: line.split()[1] for line in lines if ":" in line and line.split()[1:]}
    info = _libc.mallinfo2()
    return int(status["RssAnon"]) / 1024, int(status["RssFile"]) / 1024, (info.uordblks + info.hblkhd) / 2**20


def parse(step: str) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in seq.split("@")) for seq in step.split("+")]  # type: ignore[misc]


def random_steps(count: int, seed: int, share: int) -> list[list[tuple[int, int]]]:
    rng, steps = random.Random(seed), []
    for _ in range(count):
        seqs, left, step = rng.randint(1, 4), 256, []
        for i in range(seqs):
            prompt = rng.random() < 0.3 and left > seqs
            new = rng.randint(2, min(120, left - (seqs - i - 1))) if prompt else 1
            past = rng.randint(0, 256) if prompt else rng.randint(0, 2302)
            step.append((new, max(0, min(past, share - new))))
            left -= new
        steps.append(step)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bundle", type=Path)
    parser.add_argument("steps", nargs="*", help="steps as new@past[+new@past...]")
    parser.add_argument("--random", type=int, default=0, help="this many random steps after the listed ones")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", action="store_true", help="run the random steps a second time")
    parser.add_argument("--no-reserve", action="store_true", help="only the load's one warm-up position")
    parser.add_argument("--no-padding", action="store_true", help="steps run with their own sizes")
    parser.add_argument("--set", action="append", default=[], help="settings override, as `qwen3tts --set`")
    args = parser.parse_args()
    if args.no_reserve:
        ov_runner.reserve_shapes = lambda *limits: [[(1, 0)]]
    if args.no_padding:
        paged_talker.padded_positions = lambda count: count

    started = time.monotonic()
    runtime = load_runtime(args.bundle, load_settings(None, ["devices.native_talker=never", *args.set]))
    talker, hidden = runtime.runner._talker, runtime.runner.hidden_size
    base = memory()
    print(f"loaded in {time.monotonic() - started:.1f} s: anon {base[0]:.0f} MiB, file {base[1]:.0f} MiB, "
          f"live {base[2]:.0f} MiB; {talker.num_blocks} KV blocks of {talker.block_size}")  # fmt: skip

    def run(step: list[tuple[int, int]]) -> None:
        seqs, first = [], 0
        for new, past in step:
            blocks = talker.blocks_needed(new + past)
            seqs.append((np.ones((new, hidden), np.float32), past, list(range(first, first + blocks))))
            first += blocks
        talker.step(seqs)

    def report(label: str) -> None:
        now = memory()
        print(f"{label:44s} anon {now[0] - base[0]:+8.1f}  file {now[1] - base[1]:+8.1f}  "
              f"live {now[2] - base[2]:+8.1f} MiB", flush=True)  # fmt: skip

    for step in args.steps:
        run(parse(step))
        report(step)
    share = (talker.num_blocks // 4) * talker.block_size
    steps = random_steps(args.random, args.seed, share)
    for number, step in enumerate(steps * (2 if args.repeat else 1), start=1):
        run(step)
        if number % 10 == 0 or number == len(steps):
            report(f"random step {number} ({sum(n for n, _ in step)} positions)")


if __name__ == "__main__":
    main()
