"""What the three workers of scripts/peers/compare.py share: their common arguments, the timing of one
streamed synthesis, the result line, and the stdin protocol (`run SEED` -> one JSON line, `quit`).

Standard library only: it is imported by workers under two different venvs (ours and the peers').
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

SAMPLES_PER_FRAME = 1920  # 80 ms at 24 kHz, every engine's codec


def parser(description: str, threads: bool = True) -> argparse.ArgumentParser:
    """The arguments every worker takes; each adds where its model lives."""
    parsed = argparse.ArgumentParser(description=description)
    if threads:
        parsed.add_argument("--threads", type=int, default=2)
    parsed.add_argument("--frames", type=int, default=100)
    parsed.add_argument("--text", required=True)
    parsed.add_argument("--language", default="english")
    parsed.add_argument("--speaker", default="")
    return parsed


def warm_up_args(args: argparse.Namespace) -> argparse.Namespace:
    """The same request, 8 frames long: the warm-up run before the ready line."""
    return argparse.Namespace(**{**vars(args), "frames": 8})


@dataclass
class Streamed:
    """One streamed synthesis, timed from the request to its last sample."""

    wall_s: float
    cpu_s: float
    ttfa_s: float | None
    first_samples: int
    samples: int

    @classmethod
    def consume(cls, start: Callable[[], Iterable]) -> Streamed:
        """Call `start` (it submits the request and returns its PCM chunks) and read them to the end.

        The clocks start before `start` is called: submitting is part of the time to first audio.
        """
        wall, cpu = time.perf_counter(), time.process_time()
        first, first_samples, samples = None, 0, 0
        for chunk in start():
            if first is None:
                first, first_samples = time.perf_counter() - wall, len(chunk)
            samples += len(chunk)
        return cls(time.perf_counter() - wall, time.process_time() - cpu, first, first_samples, samples)

    def result(self, frames: int, stage_ms: dict, prefill_ms: float | None) -> dict:
        """The result line compare.py reads."""
        return {
            "frames": frames,
            "samples": self.samples,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "ttfa_s": self.ttfa_s,
            "first_chunk_frames": self.first_samples / SAMPLES_PER_FRAME,
            "stage_ms": stage_ms,
            "prefill_ms": prefill_ms,
        }


def serve(ready: dict, run: Callable[[int], dict]) -> None:
    """Print the ready line, then answer `run SEED` lines until `quit` or the end of stdin."""
    print(json.dumps({"ready": ready}), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        print(json.dumps(run(int(command[1]))), flush=True)
