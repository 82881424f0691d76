"""Even loudness: every announcement and every chime at one target (ITU-R BS.1770 / EBU R128, in LUFS),
under a true-peak ceiling, applied while the speech streams in.

Measured by pyloudnorm (BS.1770-4: K-weighting, 400 ms blocks every 100 ms, gated at -70 LUFS and 10 LU
below the ungated mean). A chime is known whole: it gets one gain (`normalised_sound`). Speech arrives in
chunks, so its gain comes from a running estimate (`Leveller`, the choice measured in docs/benchmarks.md
against a gain per sentence from its first chunk and a look-ahead window): the gated loudness of the
play so far, started from the loudness the previous play ended on (the same model and voice usually
speak at the same level) or, on the first play, from the first chunk. The gain follows the estimate in
ramps across each chunk, and a true-peak limiter (limiter.py, 2 ms look-ahead) keeps the ceiling.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pyloudnorm

from qwen3tts.appliance.audio.limiter import PeakLimiter
from qwen3tts.appliance.audio.sinks import MODEL_RATE

BLOCK = int(0.4 * MODEL_RATE)  # BS.1770 gating block
HOP = int(0.1 * MODEL_RATE)  # blocks start every 100 ms (75 % overlap)
ABSOLUTE_GATE = -70.0
RELATIVE_GATE = -10.0
SHORTEST_S = 0.05  # less than this says nothing about loudness
WINDOW_S = 6.0  # the running estimate counts the blocks of the last 6 s (docs/benchmarks.md)
MEMORY_TRUST_LU = 6.0  # a first chunk this close to the last play's level keeps that level as first guess


@dataclass(frozen=True)
class LoudnessTarget:
    """Where every announcement and chime is brought: a zone may carry its own."""

    lufs: float = -18.0
    """Integrated loudness, LUFS."""
    true_peak_dbtp: float = -1.0
    """Ceiling of the true (4x oversampled) peak, dBTP."""
    max_gain_db: float = 20.0
    """Most a quiet sound is raised: near-silence is not lifted into noise."""

    @property
    def ceiling(self) -> float:
        return 10.0 ** (self.true_peak_dbtp / 20.0)

    def gain_for(self, lufs: float | None) -> float:
        """Linear gain that brings `lufs` to the target (1.0 when nothing was measurable)."""
        if lufs is None or not math.isfinite(lufs):
            return 1.0
        return 10.0 ** (min(self.lufs - lufs, self.max_gain_db) / 20.0)

    @property
    def key(self) -> str:
        """Part of the phrase cache key: audio levelled for another target is not reused."""
        return f"loudness {self.lufs:g} LUFS, {self.true_peak_dbtp:g} dBTP, +{self.max_gain_db:g} dB"


def integrated_lufs(samples: np.ndarray) -> float | None:
    """Gated integrated loudness of 24 kHz mono samples; one block for sounds under 400 ms; None when there
    is nothing to measure (shorter than 50 ms, or all below the -70 LUFS gate)."""
    if len(samples) < SHORTEST_S * MODEL_RATE:
        return None
    block_s = min(0.4, len(samples) / MODEL_RATE)
    meter = pyloudnorm.Meter(MODEL_RATE, block_size=block_s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyloudnorm warns on clipped input; loudness is still defined
        lufs = meter.integrated_loudness(np.asarray(samples, dtype=np.float64))
    return float(lufs) if math.isfinite(lufs) and lufs >= ABSOLUTE_GATE else None


def normalised_sound(samples: np.ndarray, target: LoudnessTarget) -> np.ndarray:
    """A whole sound (a chime) at the target loudness, its true peak under the ceiling."""
    gained = np.asarray(samples, dtype=np.float32) * np.float32(target.gain_for(integrated_lufs(samples)))
    limiter = PeakLimiter(target.ceiling)
    return np.concatenate([limiter.process(gained), limiter.flush()]).astype(np.float32)


class RunningLoudness:
    """The gated integrated loudness of a stream so far: pyloudnorm's blocks, gathered segment by segment
    (each segment 400 ms plus whole hops, so the blocks continue at 100 ms steps across chunks)."""

    def __init__(self, window_s: float | None = None) -> None:
        self._pending = np.zeros(0, dtype=np.float64)
        self._powers: list[float] = []
        self._window = None if window_s is None else max(1, int(window_s * MODEL_RATE) // HOP)
        """Only the blocks of the last `window_s` count (None: all of them)."""

    def feed(self, samples: np.ndarray) -> None:
        self._pending = np.concatenate([self._pending, samples.astype(np.float64)])
        if len(self._pending) < BLOCK:
            return
        hops = (len(self._pending) - BLOCK) // HOP
        segment = self._pending[: BLOCK + hops * HOP]
        meter = pyloudnorm.Meter(MODEL_RATE)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # log10(0) of silent blocks: those are gated anyway
            meter.integrated_loudness(segment)
        self._powers += [10.0 ** ((level + 0.691) / 10.0) for level in meter.blockwise_loudness]
        self._pending = self._pending[(hops + 1) * HOP :]

    @property
    def lufs(self) -> float | None:
        """BS.1770 gating over every block so far; None before a block above -70 LUFS."""
        powers = np.array(self._powers[-self._window :] if self._window else self._powers)
        if not len(powers):
            return None
        levels = -0.691 + 10.0 * np.log10(np.maximum(powers, 1e-20))
        loud = powers[levels >= ABSOLUTE_GATE]
        if not len(loud):
            return None
        relative = -0.691 + 10.0 * np.log10(loud.mean()) + RELATIVE_GATE
        kept = powers[(levels >= ABSOLUTE_GATE) & (levels > relative)]
        return float(-0.691 + 10.0 * np.log10(kept.mean()))


class LoudnessMemory:
    """The speech loudness the last play measured: the next play's first guess (announcer thread only)."""

    def __init__(self) -> None:
        self.lufs: float | None = None


class Leveller:
    """One play's speech on its way into the track: `process()` each chunk, `flush()` at a piece's end.

    Holds back the limiter's look-ahead (2.7 ms) and nothing else, so the first audio is not delayed.
    """

    def __init__(self, target: LoudnessTarget, memory: LoudnessMemory | None = None,
                 window_s: float | None = WINDOW_S):  # fmt: skip
        self.target = target
        self.memory = memory or LoudnessMemory()
        self.meter = RunningLoudness(window_s)
        self.limiter = PeakLimiter(target.ceiling)
        self._first_guess: float | None = None
        self._gain: float | None = None

    @property
    def estimate(self) -> float | None:
        """The speech loudness this play is levelled from now (LUFS)."""
        return self.meter.lufs if self.meter.lufs is not None else self._first_guess

    def process(self, chunk: np.ndarray) -> np.ndarray:
        chunk = np.asarray(chunk, dtype=np.float32)
        if self._first_guess is None:
            self._first_guess = self._guess(integrated_lufs(chunk))
        self.meter.feed(chunk)
        gain = self.target.gain_for(self.estimate)
        start = gain if self._gain is None else self._gain
        ramp = np.linspace(start, gain, len(chunk), endpoint=False, dtype=np.float32) if start != gain else gain
        self._gain = gain
        return self.limiter.process(chunk * ramp)

    def _guess(self, first_chunk: float | None) -> float | None:
        """The previous play's loudness when the first chunk agrees with it (the same voice, as usual),
        else the first chunk's: a single chunk is short, but a remembered level may be another voice's."""
        remembered = self.memory.lufs
        if remembered is None or first_chunk is None or abs(first_chunk - remembered) > MEMORY_TRUST_LU:
            return first_chunk
        return remembered

    def flush(self) -> np.ndarray:
        """What the limiter holds back (a piece ends: silence or the next piece follows)."""
        if self.meter.lufs is not None:
            self.memory.lufs = self.meter.lufs
        return self.limiter.flush()
