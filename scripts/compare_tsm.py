"""Compare time-scale modification (TSM) libraries for the HTTP API's `speed`: quality and cost, streamed.

Each candidate is run the way the server runs it: fed 80 ms chunks (1920 samples at 24 kHz) as they would
come from the engine, then flushed. Measured per speed:

- pitch: median F0 of the output over median F0 of the input, on a speech recording (1.00 = pitch kept);
- hnr: harmonic-to-noise ratio (dB) of a stretched steady harmonic tone (a sung vowel): splicing and phase
  errors show up as energy between the harmonics;
- clicks: the largest second difference |x[n] - 2x[n-1] + x[n-2]| of the stretched tone over the input's
  (1.0 for a smooth output; a discontinuity makes it jump);
- length: output duration over input duration / speed, minus 1 (0 = exact);
- cost: CPU seconds per second of input audio; latency: input needed before the first output sample.

    PYTHONPATH=var/tsm python scripts/compare_tsm.py speech.wav   # a 24 kHz mono speech recording

Candidates whose package is missing are skipped. Read-only: writes nothing.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import soundfile as sf

RATE = 24000
CHUNK = 1920
SPEEDS = (0.25, 0.5, 0.8, 1.25, 1.5, 2.0, 4.0)


class AudioTsm:
    """audiotsm (MIT, numpy): WSOLA or the phase vocoder, its own streaming reader/writer API."""

    def __init__(self, speed: float, kind: str):
        import audiotsm
        from audiotsm.io.array import ArrayReader, ArrayWriter

        self._reader, self._writer_type = ArrayReader, ArrayWriter
        self.tsm = getattr(audiotsm, kind)(1, speed=speed)

    def push(self, chunk: np.ndarray) -> np.ndarray:
        writer = self._writer_type(1)
        self.tsm.run(self._reader(chunk[None, :].astype(np.float64)), writer, flush=False)
        return writer.data[0]

    def finish(self) -> np.ndarray:
        writer = self._writer_type(1)
        finished = False
        while not finished:
            _, finished = self.tsm.flush_to(writer)
        return writer.data[0]


class Signalsmith:
    """python-stretch (MIT): Signalsmith Stretch, C++; stateful `process`. Its output runs
    inputLatency / speed + outputLatency samples late: that pre-roll is dropped, silence flushes the tail."""

    def __init__(self, speed: float, cheaper: bool = False):
        import python_stretch.Signalsmith as stretch

        self.s = stretch.Stretch()
        self.s.preset(1, float(RATE), cheaper)
        self.s.setTimeFactor(speed)
        self.speed = speed
        self.skip = round(self.s.inputLatency() / speed + self.s.outputLatency())
        self.fed = 0
        self.out = 0

    def push(self, chunk: np.ndarray) -> np.ndarray:
        self.fed += len(chunk)
        return self._take(self.s.process(chunk[None, :].astype(np.float32))[0])

    def _take(self, y: np.ndarray) -> np.ndarray:
        drop = min(self.skip, len(y))
        self.skip -= drop
        y = y[drop:]
        self.out += len(y)
        return y

    def finish(self) -> np.ndarray:
        want = round(self.fed / self.speed) - self.out
        pad = self.s.inputLatency() + int(self.s.outputLatency() * self.speed) + CHUNK
        return self._take(self.s.process(np.zeros((1, pad), np.float32))[0])[: max(0, want)]


class Tdhs:
    """audiostretchy (BSD): David Bryant's audio-stretch (time-domain harmonic scaling), int16, via ctypes."""

    def __init__(self, speed: float, fast: bool = False):
        from audiostretchy.interface.tdhs import TDHSAudioStretch

        flags = TDHSAudioStretch.STRETCH_DUAL_FLAG if not 0.5 <= 1 / speed <= 2 else 0
        flags |= TDHSAudioStretch.STRETCH_FAST_FLAG if fast else 0
        self.st = TDHSAudioStretch(RATE // 333, RATE // 55, 1, flags)
        self.ratio = 1 / speed

    def push(self, chunk: np.ndarray) -> np.ndarray:
        samples = np.round(np.clip(chunk, -1, 1) * 32767).astype(np.int16)
        out = np.zeros(self.st.output_capacity(len(samples), self.ratio), np.int16)
        n = self.st.process_samples(samples, len(samples), out, self.ratio)
        return out[:n].astype(np.float32) / 32767

    def finish(self) -> np.ndarray:
        out = np.zeros(self.st.output_capacity(RATE, self.ratio), np.int16)
        n = self.st.flush(out)
        return out[:n].astype(np.float32) / 32767


CANDIDATES = {
    "audiotsm-wsola": lambda speed: AudioTsm(speed, "wsola"),
    "audiotsm-phasevocoder": lambda speed: AudioTsm(speed, "phasevocoder"),
    "signalsmith": lambda speed: Signalsmith(speed),
    "signalsmith-cheaper": lambda speed: Signalsmith(speed, cheaper=True),
    "audiostretchy-tdhs": lambda speed: Tdhs(speed),
    "audiostretchy-tdhs-fast": lambda speed: Tdhs(speed, fast=True),
}


def stream(make, speed: float, x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(output, CPU seconds, seconds of input fed before the first output sample)."""
    tsm = make(speed)
    parts, first = [], None
    start = time.process_time()
    for i in range(0, len(x), CHUNK):
        y = tsm.push(x[i : i + CHUNK])
        if first is None and len(y):
            first = (i + CHUNK) / RATE
        parts.append(y)
    parts.append(tsm.finish())
    cost = time.process_time() - start
    return np.concatenate(parts).astype(np.float64), cost, first if first is not None else len(x) / RATE


def f0_median(x: np.ndarray) -> float:
    """Median F0 (Hz) over voiced 40 ms frames, by normalised autocorrelation (70-400 Hz)."""
    frame, hop, lo, hi = 960, 480, RATE // 400, RATE // 70
    found = []
    for i in range(0, len(x) - frame - hi, hop):
        a = x[i : i + frame + hi]
        if np.sqrt(np.mean(a[:frame] ** 2)) < 0.02:
            continue
        ref = a[:frame]
        norm = np.linalg.norm(ref) + 1e-12
        corr = [np.dot(ref, a[lag : lag + frame]) / (norm * np.linalg.norm(a[lag : lag + frame]) + 1e-12)
                for lag in range(lo, hi)]  # fmt: skip
        best = int(np.argmax(corr))
        if corr[best] > 0.7:
            found.append(RATE / (lo + best))
    return float(np.median(found)) if found else float("nan")


def harmonic_tone(seconds: float = 3.0, f0: float = 140.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return sum(0.3 / k * np.sin(2 * np.pi * k * f0 * t + k) for k in range(1, 13)).astype(np.float64)


def hnr_db(x: np.ndarray, f0: float = 140.0) -> float:
    """Energy near the harmonics of f0 over the rest, in dB, on the middle of the signal."""
    mid = x[len(x) // 4 : 3 * len(x) // 4]
    spectrum = np.abs(np.fft.rfft(mid * np.hanning(len(mid)))) ** 2
    freqs = np.fft.rfftfreq(len(mid), 1 / RATE)
    near = np.abs(freqs - f0 * np.round(freqs / f0)) < 6.0
    near &= freqs > f0 / 2
    return float(10 * np.log10(spectrum[near].sum() / max(spectrum[~near].sum(), 1e-20)))


def second_difference_peak(x: np.ndarray) -> float:
    core = x[RATE // 10 : -RATE // 10]
    return float(np.max(np.abs(np.diff(core, 2))))


def main(argv: list[str]) -> int:
    speech, rate = sf.read(argv[1], dtype="float64") if len(argv) > 1 else (None, RATE)
    if speech is not None and (rate != RATE or speech.ndim != 1):
        print(f"{argv[1]}: need 24 kHz mono (got {rate} Hz, shape {speech.shape})")
        return 2
    tone = harmonic_tone()
    f0_in = f0_median(speech) if speech is not None else float("nan")
    peak_in = second_difference_peak(tone)
    print(f"input: tone HNR {hnr_db(tone):.1f} dB; speech F0 {f0_in:.1f} Hz")
    print("candidate             speed  pitch  hnr_dB  clicks  length  cost_s/s  latency_ms")
    for name, make in CANDIDATES.items():
        try:
            make(1.0)
        except ImportError as exc:
            print(f"{name:20s}  skipped: {exc}")
            continue
        for speed in SPEEDS:
            out_tone, _, _ = stream(make, speed, tone)
            pitch = float("nan")
            cost, latency, length = 0.0, 0.0, len(out_tone) / (len(tone) / speed) - 1
            if speech is not None:
                out_speech, cost, latency = stream(make, speed, speech)
                pitch = f0_median(out_speech) / f0_in
                cost /= len(speech) / RATE
                length = len(out_speech) / (len(speech) / speed) - 1
            clicks = second_difference_peak(out_tone) / peak_in
            print(f"{name:20s}  {speed:5.2f}  {pitch:5.3f}  {hnr_db(out_tone):6.1f}  {clicks:6.2f}  "
                  f"{length:+6.3f}  {cost:8.4f}  {1000 * latency:10.0f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
