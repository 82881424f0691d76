"""A streaming true-peak limiter: the ceiling is never crossed, whatever the gain before it did.

The loudness leveller (loudness.py) raises quiet speech to the target, which can lift a peak above full
scale; this stage lowers the gain just around such peaks. The peak is measured on the signal oversampled
4x (the inter-sample peak a DAC reconstructs, ITU-R BS.1770-4 Annex 2), and the gain is

    needed[n] = min(1, ceiling / peak[n])
    held[n]   = min(needed[n - hold .. n + lookahead])       (sliding minimum: look ahead, hold after)
    gain[n]   = mean(held[n - lookahead + 1 .. n])           (a box ramp of `lookahead` samples)

Every sample in the box window of n has n inside its minimum window, so gain[n] <= needed[n]: the ceiling
holds by construction, and the gain moves only in ramps of `lookahead` (no step, no click). The price is
`lookahead` samples of delay (2 ms by default). Written here because it is a few lines of numpy over two
vectorised scipy filters; the limiters that exist come inside whole audio frameworks.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import minimum_filter1d
from scipy.signal import resample_poly

OVERSAMPLING = 4
FILTER_CONTEXT = 64  # samples of context on each side so the oversampling filter has no edge at the block
MARGIN = 10 ** (-0.1 / 20)  # aim 0.1 dB below the ceiling: the final clip must never be what holds it


def true_peak_envelope(samples: np.ndarray) -> np.ndarray:
    """|x| per sample, taken as the largest of its 4x-oversampled values (and the sample itself)."""
    if not len(samples):
        return np.zeros(0, dtype=np.float32)
    up = resample_poly(samples.astype(np.float64), OVERSAMPLING, 1)
    envelope = np.abs(up[: len(samples) * OVERSAMPLING]).reshape(-1, OVERSAMPLING).max(axis=1)
    return np.maximum(envelope, np.abs(samples)).astype(np.float32)


def true_peak(samples: np.ndarray) -> float:
    """The true peak of `samples` (linear; 1.0 is full scale)."""
    return float(true_peak_envelope(np.concatenate([samples, np.zeros(FILTER_CONTEXT)])).max(initial=0.0))


class PeakLimiter:
    """One stream's limiter: `process()` blocks in order, then `flush()`; `lookahead` samples of delay."""

    def __init__(self, ceiling: float, lookahead: int = 48, hold: int = 480):
        self.ceiling = ceiling
        self._aim = ceiling * MARGIN
        self.lookahead = max(1, lookahead)
        self.hold = hold
        self._context = hold + 2 * self.lookahead + FILTER_CONTEXT
        """Samples already emitted that the filters of the next samples still look back at."""
        self._past = np.zeros(self._context, dtype=np.float32)  # silence before the stream
        self._pending = np.zeros(0, dtype=np.float32)
        self.engaged = 0
        """Samples whose gain was lowered, since the start (how often the ceiling was reached)."""

    def process(self, block: np.ndarray) -> np.ndarray:
        """The limited samples that are now certain: all but the last `delay` samples seen."""
        self._pending = np.concatenate([self._pending, block.astype(np.float32)])
        certain = len(self._pending) - self.delay
        return self._emit(certain) if certain > 0 else np.zeros(0, dtype=np.float32)

    def flush(self) -> np.ndarray:
        """Everything held back, limited (the stream ends: silence follows it)."""
        if not len(self._pending):
            return np.zeros(0, dtype=np.float32)
        count = len(self._pending)
        self._pending = np.concatenate([self._pending, np.zeros(self.delay, dtype=np.float32)])
        out = self._emit(count)
        self._past = np.zeros(self._context, dtype=np.float32)  # silence follows, and precedes what comes
        self._pending = np.zeros(0, dtype=np.float32)
        return out

    @property
    def delay(self) -> int:
        """Samples held back: the look-ahead plus what the oversampling filter needs to the right."""
        return self.lookahead + FILTER_CONTEXT

    def _emit(self, count: int) -> np.ndarray:
        signal = np.concatenate([self._past, self._pending])
        start = len(self._past)
        gain = self._gain(signal)[start : start + count]
        out = self._pending[:count] * gain
        self.engaged += int(np.count_nonzero(gain < 1.0))
        self._past = signal[: start + count][-self._context :]
        self._pending = self._pending[count:]
        return np.clip(
            out, -self.ceiling, self.ceiling
        )  # the oversampled bound already holds; belt and braces

    def _gain(self, signal: np.ndarray) -> np.ndarray:
        if np.abs(signal).max(initial=0.0) < self._aim / 2:  # 6 dB below: no reconstruction gets there
            return np.ones(len(signal), dtype=np.float32)
        needed = np.minimum(1.0, self._aim / np.maximum(true_peak_envelope(signal), 1e-12))
        if needed.min() >= 1.0:
            return np.ones(len(signal), dtype=np.float32)
        window = self.hold + self.lookahead + 1
        origin = self.hold - window // 2  # shifts scipy's centred window to [n - hold, n + lookahead]
        held = minimum_filter1d(needed, window, mode="nearest", origin=origin)
        sums = np.cumsum(np.concatenate([np.ones(self.lookahead), held]))
        return ((sums[self.lookahead :] - sums[: -self.lookahead]) / self.lookahead).astype(np.float32)
