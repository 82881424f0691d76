"""Even loudness: every announcement and every chime at one target (ITU-R BS.1770 / EBU R128, in LUFS),
under a true-peak ceiling, applied while the speech streams in.

Measured by pyloudnorm (BS.1770-4: K-weighting, 400 ms blocks every 100 ms, gated at -70 LUFS and 10 LU
below the ungated mean). A chime is known whole: it gets one gain (`normalised_sound`). Speech arrives in
chunks, so its gain comes from a running estimate, the choice scripts/compare_loudness.py measured
(docs/benchmarks.md) against a gain per sentence from its first chunk and a one-second look-ahead window:
the gated loudness of the last second of the stream, each chunk's own blocks included (`StreamLoudness`,
on the track's side, the same for every zone). Each zone turns that estimate into its own gain and holds
its true-peak ceiling with a limiter (limiter.py, 4.7 ms look-ahead): `ZoneLeveller`, on its audio thread.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyloudnorm

from qwen3tts.appliance.audio.limiter import PeakLimiter
from qwen3tts.appliance.audio.sinks import MODEL_RATE

if TYPE_CHECKING:
    from qwen3tts.settings import LoudnessSettings

BLOCK = int(0.4 * MODEL_RATE)  # BS.1770 gating block
HOP = int(0.1 * MODEL_RATE)  # blocks start every 100 ms (75 % overlap)
ABSOLUTE_GATE = -70.0
RELATIVE_GATE = -10.0
SHORTEST_S = 0.05  # less than this says nothing about loudness
WINDOW_S = 1.0  # the running estimate counts the blocks of the last second (docs/benchmarks.md)
RAMP = int(0.01 * MODEL_RATE)  # the estimate moves to a new chunk's over 10 ms


@dataclass(frozen=True)
class LoudnessTarget:
    """Where every announcement and chime is brought: a zone may carry its own (settings.LoudnessSettings)."""

    lufs: float = -18.0
    """Integrated loudness, LUFS."""
    true_peak_dbtp: float = -1.0
    """Ceiling of the true (4x oversampled) peak, dBTP."""
    max_gain_db: float = 20.0
    """Most a quiet sound is raised: near-silence is not lifted into noise."""

    @classmethod
    def from_settings(cls, settings: LoudnessSettings) -> LoudnessTarget | None:
        """The target of a zone's settings; None when levelling is off."""
        if not settings.enabled:
            return None
        return cls(settings.target_lufs, settings.true_peak_dbtp, settings.max_gain_db)

    @property
    def ceiling(self) -> float:
        return 10.0 ** (self.true_peak_dbtp / 20.0)

    def gain_for(self, lufs: float | None) -> float:
        """Linear gain that brings `lufs` to the target (1.0 when nothing was measurable)."""
        if lufs is None or not math.isfinite(lufs):
            return 1.0
        return 10.0 ** (min(self.lufs - lufs, self.max_gain_db) / 20.0)


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
        """BS.1770 gating over the blocks of the window (every block so far without one); None before a
        block above -70 LUFS."""
        return self._gated(self._powers[-self._window :] if self._window else self._powers)

    def recent_lufs(self, seconds: float) -> float | None:
        """The same gating over the blocks that start in the last `seconds` only."""
        return self._gated(self._powers[-max(1, int(seconds * MODEL_RATE) // HOP) :])

    @staticmethod
    def _gated(blocks: list[float]) -> float | None:
        powers = np.array(blocks)
        if not len(powers):
            return None
        levels = -0.691 + 10.0 * np.log10(np.maximum(powers, 1e-20))
        loud = powers[levels >= ABSOLUTE_GATE]
        if not len(loud):
            return None
        relative = -0.691 + 10.0 * np.log10(loud.mean()) + RELATIVE_GATE
        kept = powers[(levels >= ABSOLUTE_GATE) & (levels > relative)]
        return float(-0.691 + 10.0 * np.log10(kept.mean()))


class StreamLoudness:
    """The track's side (announcer thread): the loudness estimate each sample of a stream is levelled from.

    Every chunk, as it is put in the track, gets the gated loudness of the last `window_s` of the stream
    including the chunk itself (the whole chunk is in hand before any of it plays: a free look-ahead of
    one chunk); the first chunk, too short for a 400 ms block, is measured as one block. The estimate
    moves from one chunk's to the next over `ramp` samples at the chunk's start, so no gain steps.
    The estimate does not depend on any zone's target: each zone turns it into its own gain.
    """

    def __init__(self, window_s: float = WINDOW_S, ramp: int = RAMP) -> None:
        self.window_s = window_s
        self.ramp = ramp
        self._meter = RunningLoudness(None)
        self._last = float("nan")

    def feed(self, chunk: np.ndarray) -> np.ndarray:
        """The estimate (LUFS, NaN while nothing is measurable) for each sample of `chunk`."""
        self._meter.feed(chunk)
        estimate = self._meter.recent_lufs(max(self.window_s, len(chunk) / MODEL_RATE))
        if estimate is None:
            estimate = integrated_lufs(chunk) if math.isnan(self._last) else None
        level = self._last if estimate is None else estimate
        levels = np.full(len(chunk), level, dtype=np.float32)
        if not math.isnan(self._last) and level != self._last:
            n = min(self.ramp, len(chunk))
            levels[:n] = np.linspace(self._last, level, n, endpoint=False, dtype=np.float32)
        self._last = level
        return levels


class ZoneLeveller:
    """A zone's side (its audio thread): the gain that brings each sample's estimate to the zone's target,
    then the true-peak limiter. `process()` blocks in order, `flush()` where silence follows (the end of a
    play, a cut, an underflow); holds back only the limiter's delay (4.7 ms)."""

    def __init__(self, target: LoudnessTarget | None) -> None:
        self.target = target
        """None: levelling is off in this zone; samples pass unchanged and undelayed."""
        self.limiter = PeakLimiter(target.ceiling if target else 1.0)

    def gains(self, levels: np.ndarray) -> np.ndarray:
        """Linear gain per sample from its loudness estimate (1.0 where none was measurable)."""
        wanted = np.minimum(self.target.lufs - levels, self.target.max_gain_db)
        return np.power(10.0, np.nan_to_num(wanted, nan=0.0) / 20.0).astype(np.float32)

    def process(self, samples: np.ndarray, levels: np.ndarray) -> np.ndarray:
        samples = np.asarray(samples, dtype=np.float32)
        if self.target is None:
            return samples
        return self.limiter.process(samples * self.gains(levels))

    def flush(self) -> np.ndarray:
        return self.limiter.flush()


class Leveller:
    """Both sides in one (what one zone hears of a stream): for scripts/compare_loudness.py and tests."""

    def __init__(self, target: LoudnessTarget, window_s: float = WINDOW_S, ramp: int = RAMP) -> None:
        self.stream = StreamLoudness(window_s, ramp)
        self.zone = ZoneLeveller(target)
        self.limiter = self.zone.limiter

    def process(self, chunk: np.ndarray) -> np.ndarray:
        chunk = np.asarray(chunk, dtype=np.float32)
        return self.zone.process(chunk, self.stream.feed(chunk))

    def flush(self) -> np.ndarray:
        return self.zone.flush()
