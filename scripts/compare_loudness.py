"""Which way of levelling streamed speech keeps first audio fast and the level within +-1 LU?

    .venv/bin/python scripts/compare_loudness.py [WAV ...] [--runs N]

Plays (announcements of three pieces, streamed in the engine's chunks: 160 ms first, then 960 ms) of
generated speech-like signals at levels from -42 to -6 dBFS, with the level changing inside a play, a
quiet start, full-scale (0 dBFS) input and a quiet play with full-scale clicks; plus the WAV files given
(the tiny model's output: each file is cut into plays of three 3 s pieces). Each candidate levels every
play to -18 LUFS under -1 dBTP; the table gives the output's integrated loudness error (median, worst,
share within 1 LU), the highest true peak, the delay it adds before the first audio, and its CPU time per
second of audio (median of 3 runs; --runs). Candidates:

- sentence-gain: one gain per piece, from the loudness of its first chunk
- running-6s: the gated estimate of the last 6 s, each chunk's blocks included, the gain moving over
  the whole chunk
- running-1s: the same over the last second, the gain moving in 10 ms (Leveller: what the daemon does)
- window-1s: one second held back; the gain from the play so far including that second

Plays marked (capped) need more than the 20 dB the leveller raises at most: they stay quiet by design
and are left out of the error columns.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import soundfile

from qwen3tts.appliance.audio.limiter import PeakLimiter, true_peak
from qwen3tts.appliance.audio.loudness import Leveller, LoudnessTarget, RunningLoudness, integrated_lufs

RATE = 24000
TARGET = LoudnessTarget(-18.0, -1.0)
FIRST, LATER = 3840, 23040  # the engine's chunks: 2 frames, then 12 frames of 1920 samples


def speechlike(seconds: float, rms_db: float, rng: np.random.Generator) -> np.ndarray:
    """Voiced syllables (a harmonic series on a moving pitch) with fricatives and pauses, at an RMS level."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    f0 = rng.uniform(100, 220) * (1 + 0.08 * np.sin(2 * np.pi * rng.uniform(0.3, 1.0) * t))
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    syllables = np.clip(np.sin(2 * np.pi * rng.uniform(3.5, 5.0) * t + rng.uniform(0, 6)), 0, None) ** 1.5
    pauses = np.repeat(rng.random(int(seconds * 4) + 1) > 0.2, RATE // 4)[:n]
    signal = (voiced * syllables + 0.3 * rng.standard_normal(n) * (1 - syllables) ** 4) * pauses
    return (signal * 10 ** (rms_db / 20) / np.sqrt(np.mean(signal**2) + 1e-12)).astype(np.float32)


def generated_plays(seed: int = 7) -> list[tuple[str, list[np.ndarray]]]:
    rng = np.random.default_rng(seed)
    plays = [(f"steady {db} dB", [speechlike(3, db, rng) for _ in range(3)]) for db in range(-42, 0, 6)]
    plays.append(("rising -30/-24/-18", [speechlike(3, db, rng) for db in (-30, -24, -18)]))
    plays.append(("quiet start -32/-20/-20", [speechlike(3, db, rng) for db in (-32, -20, -20)]))
    square = np.sign(np.sin(2 * np.pi * 440 * np.arange(3 * RATE) / RATE)).astype(np.float32)
    plays.append(("0 dBFS square", [square, square, square]))
    loud = [np.clip(speechlike(3, -3, rng) * 4, -1, 1) for _ in range(3)]
    plays.append(("0 dBFS clipped speech", loud))
    spiky = [speechlike(3, -40, rng) for _ in range(3)]
    for piece in spiky:
        piece[rng.integers(0, len(piece), 5)] = 1.0
    plays.append(("-40 dB with 0 dBFS clicks", spiky))
    return plays


def wav_plays(paths: list[str]) -> list[tuple[str, list[np.ndarray]]]:
    plays = []
    for path in paths:
        audio, rate = soundfile.read(path, dtype="float32")
        assert rate == RATE, f"{path}: {rate} Hz"
        piece = 3 * RATE
        for start in range(0, len(audio) - 3 * piece + 1, 3 * piece):
            plays.append(
                (
                    f"{Path(path).stem}@{start // RATE}s",
                    [audio[start + i * piece :][:piece] for i in range(3)],
                )
            )
    return plays


def chunks(piece: np.ndarray) -> list[np.ndarray]:
    return [piece[:FIRST], *(piece[i : i + LATER] for i in range(FIRST, len(piece), LATER))]


def sentence_gain(play) -> tuple[np.ndarray, int]:
    out = []
    limiter = PeakLimiter(TARGET.ceiling)
    for piece in play:
        parts = chunks(piece)
        gain = TARGET.gain_for(integrated_lufs(parts[0]))
        out += [limiter.process(part * gain) for part in parts]
        out.append(limiter.flush())
    return np.concatenate(out), limiter.delay


def running(play, window_s: float = 1.0, ramp: int = RATE // 100) -> tuple[np.ndarray, int]:
    leveller = Leveller(TARGET, window_s, ramp)
    out = []
    for piece in play:
        out += [leveller.process(part) for part in chunks(piece)]
        out.append(leveller.flush())
    return np.concatenate(out), leveller.limiter.delay


def window(play, hold_s: float = 1.0) -> tuple[np.ndarray, int]:
    """Hold back `hold_s`: each chunk's gain comes from everything seen, `hold_s` beyond the chunk."""
    audio = np.concatenate(play)
    meter, limiter, out = RunningLoudness(), PeakLimiter(TARGET.ceiling), []
    hold = int(hold_s * RATE)
    parts = [p for piece in play for p in chunks(piece)]
    seen, emitted = 0, 0
    for part in parts:
        meter.feed(part)
        seen += len(part)
        estimate = meter.lufs if meter.lufs is not None else integrated_lufs(audio[:seen])
        ready = max(0, seen - hold)
        out.append(limiter.process(audio[emitted:ready] * TARGET.gain_for(estimate)))
        emitted = ready
    out.append(limiter.process(audio[emitted:] * TARGET.gain_for(meter.lufs)))
    out.append(limiter.flush())
    return np.concatenate(out), hold + limiter.delay


CANDIDATES = {
    "sentence-gain": sentence_gain,
    "running-6s": lambda play: running(play, 6.0, LATER),
    "running-1s": running,
    "window-1s": window,
}


def capped(play) -> bool:
    """A play quieter than the target by more than the most the leveller raises."""
    return integrated_lufs(np.concatenate(play)) < TARGET.lufs - TARGET.max_gain_db


def evaluate(name: str, plays, runs: int) -> dict[str, float]:
    method = CANDIDATES[name]
    errors, peaks, costs, delay = [], [], [], 0
    for _ in range(runs):
        cpu, seconds = 0.0, 0.0
        errors, peaks = [], []
        for _, play in plays:
            start = time.process_time()
            out, delay = method(play)
            cpu += time.process_time() - start
            seconds += sum(len(p) for p in play) / RATE
            if not capped(play):
                errors.append(integrated_lufs(out) - TARGET.lufs)
            peaks.append(20 * np.log10(true_peak(out)))
        costs.append(1000 * cpu / seconds)
    errors = np.abs(errors)
    return {
        "median": float(np.median(errors)), "worst": float(errors.max()),
        "within": float(np.mean(errors <= 1.0)), "peak": float(max(peaks)),
        "delay": 1000 * delay / RATE, "cost": float(np.median(costs)),
    }  # fmt: skip


COLUMNS = ("median error LU", "worst LU", "within 1 LU", "highest true peak dBTP", "added delay ms",
           "CPU ms per s")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wavs", nargs="*", help="WAV files of the model's speech, cut into plays")
    parser.add_argument("--runs", type=int, default=3, help="runs per candidate (CPU: their median)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs: at least 1")
    sets = {"generated": generated_plays()}
    if args.wavs:
        sets["tiny model"] = wav_plays(args.wavs)
    for label, plays in sets.items():
        left_out = [name for name, play in plays if capped(play)]
        print(
            f"\n{label}: {len(plays)} plays of three pieces, target {TARGET.lufs} LUFS / "
            f"{TARGET.true_peak_dbtp} dBTP; capped, left out of the errors: {', '.join(left_out) or 'none'}"
        )
        print(f"| candidate | {' | '.join(COLUMNS)} |")
        print("|---" * (len(COLUMNS) + 1) + "|")
        for name in CANDIDATES:
            r = evaluate(name, plays, args.runs)
            cells = [f"{r['median']:.2f}", f"{r['worst']:.2f}", f"{100 * r['within']:.0f} %",
                     f"{r['peak']:.2f}", f"{r['delay']:.1f}", f"{r['cost']:.1f}"]  # fmt: skip
            print(f"| {name} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
