"""What even loudness costs on the daemon's own path, per second of audio, and what it adds to first audio.

    .venv/bin/python scripts/bench_loudness.py [--runs 7]

One play of 9 s of speech-like signal (scripts/compare_loudness.py's) goes in the engine's chunk sizes
(160 ms, then 960 ms) into a `Track` (the announcer's side: `StreamLoudness` measures each chunk in
`put`) and out through one zone's `Playback` in 40 ms blocks into a sink that keeps nothing (the audio
thread's side: `ZoneLeveller`'s gain and true-peak limiter), with and without a loudness target; one
run alternates both, and each figure is the median over the runs:

- CPU ms per second of audio for `put` (announcer thread) and for `play` (audio thread), and their sum;
- time to first audio: CPU time from the first chunk's `put` to the first block written, i.e. what the
  levelling adds before the first sample can be heard (the limiter's look-ahead of 4.7 ms of samples
  comes on top, as samples held back, not time).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import compare_loudness as compare  # scripts/, this script's own directory
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.loudness import LoudnessTarget
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.sinks import NullSink
from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.settings import AudioSettings

RATE = 24000


class FirstWrite(NullSink):
    """Keeps nothing; notes the CPU time of the first write."""

    def __init__(self) -> None:
        super().__init__()
        self.first: float | None = None

    def write(self, block: np.ndarray) -> bool:
        if self.first is None and len(block):
            self.first = time.process_time()
        return super().write(block)


def one_run(pieces: list[np.ndarray], target: LoudnessTarget | None) -> dict[str, float]:
    seconds = sum(len(p) for p in pieces) / RATE
    settings = AudioSettings(lead_in_ms=0, tail_ms=0, jitter_buffer_ms=0)
    chunks = [chunk for piece in pieces for chunk in compare.chunks(piece)]
    # first audio: the first chunk alone is in the track when playback starts
    sink, track = FirstWrite(), Track("first")
    track.how = HowToPlay(chime="none")
    start = time.process_time()
    track.put(chunks[0])
    track.close()
    Playback(sink, settings, ChimeSet.silent(), loudness=target).play(track)
    first_ms = 1000 * (sink.first - start)
    # the whole play: put everything (announcer side), then play it (audio side)
    track = Track("whole")
    track.how = HowToPlay(chime="none")
    start = time.process_time()
    for chunk in chunks:
        track.put(chunk)
    track.close()
    put_s = time.process_time() - start
    start = time.process_time()
    Playback(NullSink(), settings, ChimeSet.silent(), loudness=target).play(track)
    play_s = time.process_time() - start
    return {"put": 1000 * put_s / seconds, "play": 1000 * play_s / seconds, "first": first_ms}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    pieces = [compare.speechlike(3, db, rng) for db in (-30, -24, -24)]
    results: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for _ in range(args.runs):
        for name, target in (("off", None), ("on", LoudnessTarget())):
            results[name].append(one_run(pieces, target))
    print(f"{args.runs} runs, 9 s of audio per run, medians")
    columns = ["put CPU ms per s", "play CPU ms per s", "total CPU ms per s", "first chunk to first write ms"]
    print(f"| loudness | {' | '.join(columns)} |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        m = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        cells = [m["put"], m["play"], m["put"] + m["play"], m["first"]]
        print(f"| {name} | {' | '.join(f'{c:.2f}' for c in cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
