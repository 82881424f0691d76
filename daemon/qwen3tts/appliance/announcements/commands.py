"""What other threads ask of the announcer, carried out on its thread.

The announcer's public methods (announcer.py: `enqueue`, `stop`, `set_volume`, ...) run on the caller's
thread and only post to its inbox; the methods of `Commands` run later on the announcer's own thread, the
only one that changes the queue and the plays. A command that needs an answer (stop, volume, voice) takes
an `Answer`, called with the fields of the answer event once the command has taken effect; an accepted
announcement is answered by its own lifecycle events (`queued`, or `rejected` / `error`) and
acknowledged (its `ack`) once spooled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.choosing import Choosing
from qwen3tts.appliance.announcements.endings import Endings
from qwen3tts.appliance.announcements.media import NOT_KEPT
from qwen3tts.appliance.announcements.play import Plays
from qwen3tts.appliance.announcements.queue import Accepted, AnnouncementQueue
from qwen3tts.appliance.announcements.reporter import Reporter
from qwen3tts.errors import RequestError
from qwen3tts.synthesis import SpeechDefaults

log = logging.getLogger(__name__)

Answer = Callable[..., None]
"""answer(event, **fields): `stopped` / `not_found` (scope, id, cancelled, reason), `volume_set` (volume),
`voice_set` (voice)."""

NOT_FOUND = "no announcement with this id is waiting or playing"


class Commands:
    """Queueing, stop, volume, an announcement's own gain, mute, defaults and shutdown; `accepting` is
    False once a shutdown began.

    `defaults` is what an announcement that names no voice, language or instruct gets (the look-ahead's).
    """

    def __init__(
        self, queue: AnnouncementQueue, plays: Plays, choosing: Choosing, endings: Endings,
        reporter: Reporter, defaults: SpeechDefaults, *, clock: Callable[[], float],
    ):  # fmt: skip
        self.queue = queue
        self.plays = plays
        self.choosing = choosing
        self.endings = endings
        self.reporter = reporter
        self.defaults = defaults
        self.clock = clock
        self.accepting = True

    def enqueue(self, ann: Announcement, redelivered: bool, ack: Callable[[], object] | None) -> None:
        """Spool and queue an accepted announcement, then acknowledge its MQTT message (`ack`)."""
        now = self.clock()
        try:
            if not self.accepting and not ann.spooled:  # nothing brings it back: say so
                self.reporter.emit(ann, "cancelled", NOT_KEPT)
                return
            if not self.accepting:
                log.info("%s: not queued while stopping; the broker delivers it again", ann.id)
                return  # not acknowledged either: it comes back after the restart
            if ann.expired(now):
                self.queue.recent.add(ann.id, ann, message_id=ann.message_id)
                self.reporter.emit(ann, "expired", "expired before it was queued")
            else:
                with self.endings.isolated(ann, "queueing"):  # a bug here fails this announcement only
                    self._put(ann, redelivered)
        finally:
            if self.accepting and ack is not None:
                ack()  # after the spool write, or after the refusal: never redelivered forever

    def _put(self, ann: Announcement, redelivered: bool) -> None:
        try:
            written, accepted = self.reporter.spool_write(
                "spool a new announcement", self.queue.put, ann, redelivered
            )
        except RequestError as exc:  # the queue is full
            self.reporter.emit(ann, "rejected", str(exc), ann.warnings)
            return
        if not written:  # said once in the log: nothing is queued
            self.reporter.emit(ann, "error", f"spool write failed: {self.reporter.trouble}")
            return
        if accepted is not Accepted.QUEUED:
            log.info("%s: dropped, %s", ann.id, accepted.value)
            return
        self.reporter.emit(ann, "queued", "", ann.warnings, zones=ann.zones)  # none: an all-call

    def stop(self, scope: str, ann_id: str | None, answer: Answer) -> None:
        """`current` cuts what plays now (in every zone), `all` also cancels what waits, `id` the one."""
        if scope == "id":
            waiting = self.queue.find(ann_id)
            playing = self.plays.playing_one(ann_id)
            if waiting is not None:
                self.endings.cancel_waiting(waiting)
                answer("stopped", id=ann_id, scope="id", cancelled=(ann_id,))
            elif playing is not None:
                self.endings.cut(playing, Cut.STOP)
                answer("stopped", id=ann_id, scope="id")
            else:
                log.info("stop: no announcement %s is waiting or playing", ann_id)
                answer("not_found", id=ann_id, scope="id", reason=NOT_FOUND)
            return
        cancelled = self.queue.waiting() if scope == "all" else []
        for ann in cancelled:
            self.endings.cancel_waiting(ann)
        for play in list(self.plays.playing):
            self.endings.cut(play, Cut.STOP)
        answer("stopped", scope=scope, cancelled=tuple(a.id for a in cancelled))

    def set_volume(self, volume: float, answer: Answer | None) -> None:
        self.choosing.volume = volume
        log.info("volume set to %.2f", volume)
        if answer is not None:
            answer("volume_set", volume=volume)

    def set_gain(self, ann_id: str, gain: float) -> None:
        """An announcement's own volume (a renderer's gain), waiting or playing: the track that plays it
        follows at once; the master volume stays as it is."""
        waiting, playing = self.queue.find(ann_id), self.plays.playing_one(ann_id)
        if waiting is not None:
            self.queue.change(waiting, volume=gain)
        if playing is not None:
            playing.ann = replace(playing.ann, volume=gain)  # a resume after a cut plays at it too
            playing.track.set_gain(self.choosing.gain(playing.ann))
        if waiting is None and playing is None:
            log.info("gain: no announcement %s is waiting or playing", ann_id)
            return
        log.info("%s: own volume set to %.2f", ann_id, gain)

    def set_muted(self, muted: bool) -> None:
        self.choosing.muted = muted
        log.info("muted" if muted else "unmuted")

    def set_defaults(self, changes: dict[str, object], answer: Answer | None) -> None:
        for name, value in changes.items():
            setattr(self.defaults, name, value)
        log.info("defaults now: voice %s, language %s", self.defaults.voice, self.defaults.language)
        if answer is not None:
            answer("voice_set", voice=self.defaults.voice)
        self.reporter.on_change()

    def shut_down(self, finish: bool) -> None:
        """Start nothing new; cut what plays unless it may `finish`. What waits stays spooled as it was."""
        self.accepting = False
        for play in list(self.plays.playing) if not finish else []:
            self.endings.cut(play, Cut.SHUTDOWN)
        for ann in self.queue.waiting():
            self.plays.drop_ahead(ann)  # never popped: they stay spooled as they were
            if not ann.spooled:  # media is not: it ends here, with an event
                self.endings.cancel_waiting(ann, NOT_KEPT)
