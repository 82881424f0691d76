"""The jitter buffer between synthesis and playback.

The announcer moves PCM from engine handles into an announcement's `PcmBuffer` (never blocking); the
audio thread takes fixed-size blocks out of it. Playback starts only when enough is buffered that a
synthesis slower than real time will not run dry: `jitter_threshold()`.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

import numpy as np

from qwen3tts.appliance.sinks import MODEL_RATE

log = logging.getLogger(__name__)


def jitter_threshold(jitter_buffer_ms: int, expected_duration_s: float | None, rtf: float | None) -> int:
    """Samples to buffer before speech starts: max(jitter_buffer_ms, expected * max(0, 1 - 1/rtf)).

    rtf = synthesis time / audio time, measured by the caller. With rtf > 1 the audio arrives at
    1/rtf of real time, so a T-second announcement needs T * (1 - 1/rtf) seconds in hand at the
    start to play without a stall. Unknown rtf or duration -> just jitter_buffer_ms.
    """
    floor = jitter_buffer_ms * MODEL_RATE // 1000
    if not expected_duration_s or not rtf or rtf <= 0:
        return floor
    shortfall = expected_duration_s * max(0.0, 1.0 - 1.0 / rtf)
    return max(floor, int(np.ceil(shortfall * MODEL_RATE)))


class PcmBuffer:
    """A thread-safe FIFO of 24 kHz float32 samples with an end marker; one producer, one consumer."""

    def __init__(self) -> None:
        self._chunks: deque[np.ndarray] = deque()
        self._available = 0
        self._cond = threading.Condition()
        self.received = 0
        """Samples ever put in (for stats and tests)."""
        self.taken = 0
        """Samples ever taken out: the playback position, read by the announcer."""
        self.closed = False
        """The source ended (normally or with `error`); nothing more will come."""
        self.error: BaseException | None = None
        self.abandoned = False
        """The consumer gave up (interrupt): the feeder stops pulling from the source."""

    @property
    def available(self) -> int:
        with self._cond:
            return self._available

    def put(self, chunk: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk, dtype=np.float32).reshape(-1)
        with self._cond:
            if self.abandoned or self.closed or len(chunk) == 0:
                return
            self._chunks.append(chunk)
            self._available += len(chunk)
            self.received += len(chunk)
            self._cond.notify_all()

    def close(self, error: BaseException | None = None) -> None:
        with self._cond:
            self.closed = True
            self.error = error
            self._cond.notify_all()

    def abandon(self) -> None:
        """Drop everything buffered and refuse more; the flush half of an interrupt."""
        with self._cond:
            self.abandoned = True
            self._chunks.clear()
            self._available = 0
            self._cond.notify_all()

    def cut(self, at: int) -> bool:
        """End the stream at absolute sample `at` (a sentence boundary): later samples are dropped and
        nothing more is accepted. False when playback has already gone past `at`."""
        with self._cond:
            if self.taken > at:
                return False
            keep = min(self._available, at - self.taken)
            kept = self._pop(keep) if keep else np.zeros(0, dtype=np.float32)
            self._chunks.clear()
            self._available = 0
            self.taken -= len(kept)  # _pop counted them as taken; they are only set aside
            if len(kept):
                self._chunks.append(kept)
                self._available = len(kept)
            self.closed = True  # refuses further put()s; what is kept still plays
            self._cond.notify_all()
            return True

    def ready(self, threshold: int) -> bool:
        """True when `threshold` samples are buffered or the source has ended."""
        with self._cond:
            return self.closed or self._available >= threshold

    def wait(self, threshold: int, timeout: float) -> bool:
        """Block up to `timeout` seconds for `ready(threshold)`."""
        with self._cond:
            return self._cond.wait_for(lambda: self.closed or self._available >= threshold, timeout)

    def take(self, n: int, reserve: int = 0) -> tuple[np.ndarray | None, bool]:
        """Up to `n` samples and whether they are the last ones; (None, False) when not enough is here yet.

        While the source runs, `reserve` samples are held back so the final block is always long
        enough for the fade-out; once it has ended, a remainder shorter than n + reserve comes in one
        final block.
        """
        with self._cond:
            if self.closed and self._available <= n + reserve:
                return self._pop(self._available), True
            if not self.closed and self._available < n + reserve:
                return None, False
            return self._pop(n), False

    def take_now(self, n: int) -> np.ndarray:
        """Up to `n` samples, whatever is here, without waiting (the fade-out of an interrupt)."""
        with self._cond:
            return self._pop(min(n, self._available))

    def _pop(self, n: int) -> np.ndarray:
        parts, need = [], n
        while need > 0:
            head = self._chunks[0]
            if len(head) <= need:
                parts.append(self._chunks.popleft())
                need -= len(head)
            else:
                parts.append(head[:need])
                self._chunks[0] = head[need:]
                need = 0
        self._available -= n
        self.taken += n
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
