"""The track: one announcement's audio on its way from the announcer to the sink, and the only thing the
announcer and the audio thread share.

The announcer (one thread) puts 24 kHz float32 PCM in as synthesis produces it, sets how the track is played
(chime, gain, start threshold) and may cut it; the audio thread (the other) takes fixed-size blocks out and
writes how far it got (started, first audio, underflows, ended). Every field both sides touch sits behind the
track's one condition, so each read is consistent without another lock anywhere. Nothing else passes
between the two threads.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

import numpy as np

from qwen3tts.engine.sequence import Priority


@dataclass(frozen=True)
class HowToPlay:
    """Set by the announcer when the track becomes the one that plays."""

    priority: Priority = Priority.NORMAL
    chime: str | None = None
    """None/'default' = the priority's chime, 'none' = no chime, or a priority name to borrow its chime."""
    gain: float = 1.0
    """Linear gain of chime and speech (the master volume and the announcement's own, already combined)."""


class Track:
    """A FIFO of samples with an end marker, plus the playing instructions and progress of one play."""

    def __init__(self, label: str) -> None:
        self.label = label
        """Names the output (the WAV sink's file name); playback gives it no other meaning."""
        self.how = HowToPlay()
        self._cond = threading.Condition()
        self._chunks: deque[np.ndarray] = deque()
        self._available = 0
        self._received = 0
        self._taken = 0
        self._closed = False
        self._abandoned = False
        self._start_threshold = 0
        self._cut = False
        self._keep_partial = True
        self._t_started: float | None = None
        self._t_first_audio: float | None = None
        self._t_ended: float | None = None
        self._played_out = False
        self._error: str | None = None
        self._underflows = 0

    def __repr__(self) -> str:
        return f"Track({self.label!r}, received={self._received}, taken={self._taken}, closed={self._closed})"

    # ---- the announcer's side ----

    def put(self, chunk: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk, dtype=np.float32).reshape(-1)
        with self._cond:
            if self._abandoned or self._closed or len(chunk) == 0:
                return
            self._chunks.append(chunk)
            self._available += len(chunk)
            self._received += len(chunk)
            self._cond.notify_all()

    def close(self) -> None:
        """Nothing more will come: what is buffered plays to the end."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abandon(self) -> None:
        """Drop everything buffered and refuse more (the announcement no longer plays this track)."""
        with self._cond:
            self._abandoned = self._closed = True
            self._chunks.clear()
            self._available = 0
            self._cond.notify_all()

    def end_at(self, at: int) -> bool:
        """End the stream at absolute sample `at` (a sentence boundary): later samples are dropped and
        nothing more is accepted. False when playback has already gone past `at`."""
        with self._cond:
            if self._taken > at:
                return False
            keep = min(self._available, at - self._taken)
            kept = self._pop(keep) if keep else np.zeros(0, dtype=np.float32)
            self._taken -= len(kept)  # _pop counted them as taken; they are only set aside
            self._chunks.clear()
            self._available = 0
            if len(kept):
                self._chunks.append(kept)
                self._available = len(kept)
            self._closed = True
            self._cond.notify_all()
            return True

    def set_start_threshold(self, samples: int) -> None:
        """Samples to hold back before speech starts (revised until it starts; see jitter_threshold())."""
        with self._cond:
            self._start_threshold = samples
            self._cond.notify_all()

    def cut(self, keep_partial: bool = True) -> None:
        """Fade out within one block and end; `keep_partial=False` drops a recording of it (shutdown)."""
        with self._cond:
            self._cut, self._keep_partial = True, keep_partial
            self._cond.notify_all()

    # ---- what both sides read ----

    @property
    def available(self) -> int:
        with self._cond:
            return self._available

    @property
    def received(self) -> int:
        with self._cond:
            return self._received

    @property
    def taken(self) -> int:
        """Samples taken out so far: the playback position."""
        with self._cond:
            return self._taken

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    @property
    def is_cut(self) -> bool:
        with self._cond:
            return self._cut

    @property
    def keep_partial(self) -> bool:
        with self._cond:
            return self._keep_partial

    @property
    def start_threshold(self) -> int:
        with self._cond:
            return self._start_threshold

    @property
    def t_started(self) -> float | None:
        with self._cond:
            return self._t_started

    @property
    def t_first_audio(self) -> float | None:
        with self._cond:
            return self._t_first_audio

    @property
    def t_ended(self) -> float | None:
        """Clock time the last sample was heard (or the cut faded out); None while playing."""
        with self._cond:
            return self._t_ended

    @property
    def ended(self) -> bool:
        return self.t_ended is not None

    @property
    def played_out(self) -> bool:
        """Ended after its tail, not cut."""
        with self._cond:
            return self._played_out

    @property
    def error(self) -> str | None:
        """'<ExceptionClass>: message' when the output failed."""
        with self._cond:
            return self._error

    @property
    def underflows(self) -> int:
        with self._cond:
            return self._underflows

    # ---- the audio thread's side ----

    def ready(self, threshold: int) -> bool:
        """True when `threshold` samples are buffered or the source has ended."""
        with self._cond:
            return self._closed or self._available >= threshold

    def wait(self, threshold: int, timeout: float) -> bool:
        """Block up to `timeout` seconds for `ready(threshold)` or a cut."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._cut or self._closed or self._available >= threshold, timeout
            )

    def take(self, n: int, reserve: int = 0) -> tuple[np.ndarray | None, bool]:
        """Up to `n` samples and whether they are the last ones; (None, False) when not enough is here yet.

        While the source runs, `reserve` samples are held back so the final block is always long enough
        for the fade-out; once it has ended, a remainder shorter than n + reserve comes in one final block.
        """
        with self._cond:
            if self._closed and self._available <= n + reserve:
                return self._pop(self._available), True
            if not self._closed and self._available < n + reserve:
                return None, False
            return self._pop(n), False

    def take_now(self, n: int) -> np.ndarray:
        """Up to `n` samples, whatever is here, without waiting (the fade-out of a cut)."""
        with self._cond:
            return self._pop(min(n, self._available))

    def started(self, t: float) -> None:
        with self._cond:
            self._t_started = t

    def first_audio(self, t: float) -> None:
        with self._cond:
            if self._t_first_audio is None:
                self._t_first_audio = t

    def underflowed(self) -> None:
        with self._cond:
            self._underflows += 1

    def failed(self, error: str) -> None:
        with self._cond:
            self._error = self._error or error

    def finished(self, t: float, played_out: bool) -> None:
        """The last sample was heard at `t` (the announcer turns this into `finished` or a cut's event)."""
        with self._cond:
            self._t_ended, self._played_out = t, played_out
            self._cond.notify_all()

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
        self._taken += n
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
