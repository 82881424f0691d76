"""What other threads ask of the announcer, and how its loop carries each request out.

The public methods run on the caller's thread and only post to the announcer's inbox; the underscore
twin of each runs later on the announcer's own thread, the only one that changes the queue and the
announcements. A command that needs an answer (stop, volume, voice) takes an `Answer`, called with the
fields of the answer event once the command has taken effect; an accepted announcement is answered by its
own lifecycle events (`queued`, or `rejected` / `error`) and acknowledged (its `ack`) once spooled.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.queue import Accepted
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

Answer = Callable[..., None]
"""answer(event, **fields): `stopped` / `not_found` (scope, id, cancelled, reason), `volume_set` (volume),
`voice_set` (voice)."""

NOT_FOUND = "no announcement with this id is waiting or playing"


class CommandsMixin:
    """The command half of `Announcer` (announcer.py), which it is mixed into: `self` is the announcer."""

    # ---- posted from other threads ----

    def enqueue(
        self, ann: Announcement, redelivered: bool = False, ack: Callable[[], object] | None = None
    ) -> None:
        """Queue an accepted announcement: spooled on the announcer's thread, then `ack` acknowledges the
        MQTT message it came in (QoS 1), once, after the spool write or the refusal."""
        self._post(self._enqueue, ann, redelivered, ack)

    def stop(self, scope: str, ann_id: str | None, answer: Answer) -> None:
        """`current`, `all` (waiting ones too) or `id`: cut or cancel, then answer."""
        self._post(self._stop, scope, ann_id, answer)

    def set_volume(self, volume: float, answer: Answer | None = None) -> None:
        self._post(self._set_volume, volume, answer)

    def set_muted(self, muted: bool) -> None:
        self._post(self._set_muted, muted)

    def set_voice(self, voice: str, answer: Answer | None = None) -> None:
        """The default voice (a name the intake checked against the voice catalog)."""
        self._post(self._set_defaults, {"voice": voice}, answer)

    def set_defaults(self, changes: dict[str, object]) -> None:
        """Default voice / language / instruct fields a reload changed."""
        self._post(self._set_defaults, changes, None)

    def applied(self, timeout: float) -> bool:
        """Wait until everything posted before this call has been carried out (a reload is done only then);
        False after `timeout`."""
        done = threading.Event()
        self._post(done.set)
        return done.wait(timeout)

    def drain(self, finish: bool, timeout: float) -> bool:
        """Shutdown (any thread): start nothing new, finish or cut what plays.

        True once nothing plays; False after `timeout` (a wedged loop is left behind).
        """
        self._post(self._shut_down, finish)
        return self._drained.wait(timeout)

    # ---- carried out on the announcer's thread ----

    def _enqueue(self, ann: Announcement, redelivered: bool, ack: Callable[[], object] | None) -> None:
        now = self._clock()
        try:
            if not self.accepting:
                log.info("%s: not queued while stopping; the broker delivers it again", ann.id)
                return  # not acknowledged either: it comes back after the restart
            if ann.expired(now):
                self.queue.recent.add(ann.id, ann, message_id=ann.message_id)
                self._emit(ann, "expired", "expired before it was queued")
            else:
                with self._isolated(ann, "queueing"):  # a bug here fails this announcement (an `error`) only
                    self._put(ann, redelivered)
        finally:
            if self.accepting and ack is not None:
                ack()  # after the spool write, or after the refusal: never redelivered forever

    def _put(self, ann: Announcement, redelivered: bool) -> None:
        try:
            what = "spool a new announcement"
            written, accepted = self._spool_write(what, self.queue.put, ann, redelivered)
        except RequestError as exc:  # the queue is full
            self._emit(ann, "rejected", str(exc), ann.warnings)
            return
        if not written:  # said once in the log: nothing is queued
            self._emit(ann, "error", f"spool write failed: {self._spool_trouble}")
            return
        if accepted is not Accepted.QUEUED:
            log.info("%s: dropped, %s", ann.id, accepted.value)
            return
        self._emit(ann, "queued", "", ann.warnings, zones=ann.zones)  # the zones it addresses; none: all-call

    def _stop(self, scope: str, ann_id: str | None, answer: Answer) -> None:
        """`current` cuts what plays now (in every zone), `all` also cancels what waits."""
        if scope == "id":
            waiting = self.queue.find(ann_id)
            playing = next((play for play in self.playing if play.id == ann_id), None)
            if waiting is not None:
                self._cancel_waiting(waiting)
                answer("stopped", id=ann_id, scope="id", cancelled=(ann_id,))
            elif playing is not None:
                self._cut(playing, Cut.STOP)
                answer("stopped", id=ann_id, scope="id")
            else:
                log.info("stop: no announcement %s is waiting or playing", ann_id)
                answer("not_found", id=ann_id, scope="id", reason=NOT_FOUND)
            return
        cancelled = self.queue.waiting() if scope == "all" else []
        for ann in cancelled:
            self._cancel_waiting(ann)
        for play in list(self.playing):
            self._cut(play, Cut.STOP)
        answer("stopped", scope=scope, cancelled=tuple(a.id for a in cancelled))

    def _cancel_waiting(self, ann: Announcement) -> None:
        self._gone(ann)
        self._spool_write("remove a cancelled announcement", self.queue.discard, ann)
        self._emit(ann, "cancelled", "stop")

    def _set_volume(self, volume: float, answer: Answer | None) -> None:
        self.volume = volume
        log.info("volume set to %.2f", volume)
        if answer is not None:
            answer("volume_set", volume=volume)

    def _set_muted(self, muted: bool) -> None:
        self.muted = muted
        log.info("muted" if muted else "unmuted")

    def _set_defaults(self, changes: dict[str, object], answer: Answer | None) -> None:
        defaults = self.lookahead.defaults
        for name, value in changes.items():
            setattr(defaults, name, value)
        log.info("defaults now: voice %s, language %s", defaults.voice, defaults.language)
        if answer is not None:
            answer("voice_set", voice=defaults.voice)
        self._on_change()

    def _shut_down(self, finish: bool) -> None:
        self.accepting = False
        for play in list(self.playing) if not finish else []:
            self._cut(play, Cut.SHUTDOWN)
        for ann in self.queue.waiting():
            self._drop_ahead(ann)  # never popped: they stay spooled as they were
