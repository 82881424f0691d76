"""The audio thread: one long-lived thread that plays utterances one after another.

Serialised playback (two announcements never mix) with a small FIFO in
front of it. Ordering by priority is the announcement queue's job; this queue only holds what is
already being synthesised. Barge-in, cancel and flush take the worker's lock, so "put the emergency
first and interrupt what plays" and "drop everything queued and interrupt what plays" are atomic.
While idle the thread tries to bring back a lost sound card and beats its heartbeat.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from qwen3tts.appliance.playback import Playback, Utterance

log = logging.getLogger(__name__)


class AudioWorker:
    """Owns the audio thread; every public method is thread-safe."""

    def __init__(
        self,
        playback: Playback,
        *,
        idle_tick_s: float = 0.5,
        heartbeat: Callable[[], None] | None = None,
    ):
        self.playback = playback
        self._idle_tick_s = idle_tick_s
        self._heartbeat = heartbeat or (lambda: None)
        self._queue: deque[Utterance] = deque()
        self._cond = threading.Condition()
        self._current: Utterance | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None

    @property
    def queue_depth(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def current_id(self) -> str | None:
        with self._cond:
            return self._current.id if self._current is not None else None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="audio", daemon=True)
        self._thread.start()

    def submit(self, utt: Utterance, *, barge_in: bool = False) -> None:
        """Queue `utt`; with barge_in it goes first and interrupts the one playing (reason 'barge-in')."""
        with self._cond:
            if barge_in:
                self._queue.appendleft(utt)
                if self._current is not None:
                    self.playback.interrupt(self._current.id, reason="barge-in")
            else:
                self._queue.append(utt)
            self._cond.notify_all()

    def cancel(self, item_id: str, reason: str = "stopped") -> bool:
        """Stop one announcement, queued or playing; False when it is neither."""
        with self._cond:
            queued = next((utt for utt in self._queue if utt.id == item_id), None)
            if queued is None:
                return self._current is not None and self.playback.interrupt(item_id, reason)
            self._queue.remove(queued)
        self.playback.discard(queued, reason)
        return True

    def flush(self, reason: str = "stopped") -> list[str]:
        """Drop everything queued and interrupt what plays, atomically; the ids affected."""
        with self._cond:
            dropped, self._queue = list(self._queue), deque()
            ids = [utt.id for utt in dropped]
            if self._current is not None and self.playback.interrupt(self._current.id, reason):
                ids.insert(0, self._current.id)
        for utt in dropped:
            self.playback.discard(utt, reason)
        return ids

    def stop(self, *, finish_current: bool = True, timeout: float | None = 10.0) -> list[Utterance]:
        """End the thread; the queued utterances that never played are returned (no events sent for them).

        Their sources are cancelled; they stay in the durable spool, so a restart plays them.
        """
        with self._cond:
            self._stopping = True
            left, self._queue = list(self._queue), deque()
            if self._current is not None and not finish_current:
                self.playback.interrupt(self._current.id, reason="shutdown")
            self._cond.notify_all()
        for utt in left:
            if utt.cancel_source is not None:
                utt.cancel_source()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("audio thread did not stop within %s s", timeout)
        return left

    def _loop(self) -> None:
        while True:
            self._heartbeat()
            with self._cond:
                if not self._queue and not self._stopping:
                    self._cond.wait(self._idle_tick_s)
                if self._stopping and not self._queue:
                    return
                utt = self._queue.popleft() if self._queue else None
                self._current = utt
                if utt is not None:
                    self.playback.reserve(utt)  # under the lock: a barge-in now interrupts this one
            if utt is None:
                self._keep_sink_alive()
                continue
            try:
                self.playback.play(utt)
            except Exception:  # play() reports per-announcement failures itself; this is a bug guard
                log.exception("playback of %s crashed", utt.id)
            finally:
                with self._cond:
                    self._current = None

    def _keep_sink_alive(self) -> None:
        try:
            self.playback.sink.recover()
        except Exception:
            log.exception("audio sink recovery failed")
