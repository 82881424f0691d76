"""The announcer: the one loop that changes announcements and the queue.

Each turn: apply stop commands; expire; forget look-ahead work for announcements that left the queue;
move PCM from engine handles into announcement buffers (never blocking); read playback progress and
emit events; choose what speaks next or barge in; submit the sentences that are due. Synthesis runs
ahead of playback (`lookahead.py`): the current announcement's next sentences and the next queued
announcements, bounded by `announcements.lookahead_s` and the engine's batch limit, so the engine
batches and consecutive announcements follow each other without a synthesis gap.

Priorities, as in PA paging: an emergency that may interrupt cuts the current announcement
within one audio block (barge-in); a priority announcement takes over at the next sentence boundary.
The interrupted one is queued again from the sentence it was in (`interrupted: resume`, a second
`queued` event) or cancelled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from qwen3tts.appliance.announcement import Announcement, AnnouncementStatus, Cut
from qwen3tts.appliance.intake import announcement_events
from qwen3tts.appliance.jitter import PcmBuffer
from qwen3tts.appliance.lookahead import Synthesis, Voice
from qwen3tts.appliance.messages import PRIORITIES, Stop
from qwen3tts.appliance.phrase_replay import PhraseReplay
from qwen3tts.appliance.playback import Playback, Track
from qwen3tts.appliance.queue import AnnouncementQueue
from qwen3tts.appliance.registered_voices import RegisteredVoices
from qwen3tts.appliance.sinks import MODEL_RATE
from qwen3tts.appliance.synthesis import TextOptions
from qwen3tts.engine.engine import Engine
from qwen3tts.errors import RequestError
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

BUSY_TICK_S = 0.02  # while anything is synthesised or played: how often PCM and progress are read
IDLE_TICK_S = 0.25

__all__ = ["Announcer", "Voice"]


class Announcer:
    """Owns the current announcement and the look-ahead; `run()` is its supervised loop."""

    def __init__(
        self,
        settings: Settings,
        queue: AnnouncementQueue,
        engine: Engine,
        playback: Playback,
        publish: Callable[[object], object],
        voice: Voice,
        *,
        clock: Callable[[], float] = time.time,
        heartbeat: Callable[[], None] = lambda: None,
        on_change: Callable[[], None] = lambda: None,
        text: TextOptions | None = None,
        voices: RegisteredVoices | None = None,
        replay: PhraseReplay | None = None,
    ):
        self.settings = settings
        self.queue = queue
        self.playback = playback
        self.publish = publish
        self.synthesis = Synthesis(engine, voice, settings, text, voices, replay)
        self._clock = clock
        self._beat = heartbeat
        self._on_change = on_change
        self.current: Announcement | None = None
        self.ahead: dict[str, Announcement] = {}
        """Waiting announcements whose synthesis has started (they stay in the queue's order)."""
        self.handling: Announcement | None = None
        """The announcement this turn works on; the supervisor fails it if the turn raises."""
        self.accepting = True
        self._commands: deque[Stop | _Shutdown] = deque()
        self._wake = threading.Event()

    @property
    def voice(self) -> Voice:
        return self.synthesis.voice

    @voice.setter
    def voice(self, voice: Voice) -> None:
        self.synthesis.voice = voice

    @property
    def current_from_cache(self) -> bool:
        current = self.current
        return current is not None and current.from_cache

    @property
    def current_id(self) -> str | None:
        current = self.current
        return current.id if current is not None else None

    # ---- other threads ----

    def wake(self) -> None:
        self._wake.set()

    def command(self, stop: Stop) -> None:
        """A stop from the intake; applied on the announcer's next turn."""
        self._commands.append(stop)
        self.wake()

    # ---- the loop ----

    def run(self, stop: threading.Event) -> None:
        self._report_quarantined()
        while not stop.is_set():
            self._wake.clear()
            self.turn()
            busy = self.current is not None or bool(self.ahead)
            self._wake.wait(BUSY_TICK_S if busy else IDLE_TICK_S)

    def turn(self) -> None:
        self._beat()
        now = self._clock()
        while self._commands:
            self._apply(self._commands.popleft())
        self._expire(now)
        self._forget_vanished()
        for ann in self._working():
            self.handling = ann
            self._move_pcm(ann)
        if self.current is not None:
            self.handling = self.current
            self._follow_playback(self.current)
        self.handling = None
        self._choose(now)
        self._submit(now)
        self.handling = None

    def _working(self) -> list[Announcement]:
        return [a for a in (self.current, *self.ahead.values()) if a is not None]

    # ---- commands, expiry, vanished look-ahead ----

    def _apply(self, stop: Stop | _Shutdown) -> None:
        if isinstance(stop, _Shutdown):
            self._shut_down(stop.finish)
            return
        current = self.current
        if current is None or (stop.scope == "id" and stop.id != current.id):
            return
        self._cut(current, Cut.STOP)

    def _shut_down(self, finish: bool) -> None:
        self.accepting = False
        if self.current is not None and not finish:
            self._cut(self.current, Cut.SHUTDOWN)
        for ann in list(self.ahead.values()):
            self._drop_ahead(ann)  # never popped: they stay spooled as they were

    def _expire(self, now: float) -> None:
        for ann in self.queue.expire(now):
            self._drop_ahead(ann)
            ann.status = AnnouncementStatus.EXPIRED
            self._emit(ann, "expired", "time to live ran out before it could play")

    def _forget_vanished(self) -> None:
        """Look-ahead work for announcements the intake took out of the queue (stop) is cancelled."""
        waiting = set(self.queue.ids())
        for ann in [a for a in self.ahead.values() if a.id not in waiting]:
            log.info("%s: left the queue; its synthesis is cancelled", ann.id)
            self._drop_ahead(ann)
            ann.status = AnnouncementStatus.CANCELLED

    def _drop_ahead(self, ann: Announcement) -> None:
        ahead = self.ahead.pop(ann.id, None)
        (ahead or ann).cancel_synthesis()

    # ---- PCM and playback progress ----

    def _move_pcm(self, ann: Announcement) -> None:
        try:
            self.synthesis.move_pcm(ann)
        except RequestError as exc:
            self._failed(ann, str(exc))

    def _follow_playback(self, ann: Announcement) -> None:
        track = ann.track
        if track is None:
            return
        if track.t_started is not None and ann.t_started is None:
            ann.t_started = track.t_started
            self._emit(ann, "started")
        if track.t_first_audio is None:
            track.start_threshold = self.synthesis.start_threshold(ann, self.settings.audio.jitter_buffer_ms)
        elif ann.t_first_audio is None:
            ann.t_first_audio = track.t_first_audio
            self._emit(ann, "first_audio")
        if track.ended:
            self._ended(ann, track)

    def _ended(self, ann: Announcement, track: Track) -> None:
        try:
            self._report_end(ann, track)
        finally:
            # Only now: drain() waits for `current` to clear, so its last event is out before shutdown.
            self.current = None
        self._on_change()

    def _report_end(self, ann: Announcement, track: Track) -> None:
        if ann.cut is Cut.SHUTDOWN:
            log.info("%s: cut by the shutdown; it stays spooled", ann.id)
            self.queue.release(ann)
            ann.cancel_synthesis()
        elif track.error is not None or ann.cut is Cut.FAILURE:
            self._fail(ann, ann.error or track.error or "playback failed")
        elif ann.cut is Cut.BARGE_IN:
            self._interrupted(ann, self.synthesis.sentence_playing(ann), Cut.BARGE_IN)
        elif ann.cut is Cut.TAKEOVER and track.played_out:
            self._interrupted(ann, ann.cut_at or 0, Cut.TAKEOVER)
        elif ann.cut is not None:
            self._cancelled(ann, ann.cut.value)
        else:
            self._finished(ann, track)

    def _finished(self, ann: Announcement, track: Track) -> None:
        ann.t_finished = track.t_ended
        again = self.queue.done(ann, self._clock())
        if self.synthesis.replay is not None:
            self.synthesis.replay.keep(ann, plays_again=again)  # played out, not cut: worth keeping
        ann.cancel_synthesis()
        ann.status = AnnouncementStatus.QUEUED if again else AnnouncementStatus.FINISHED
        self._emit(ann, "finished", "repeats later" if again else "")

    def _interrupted(self, ann: Announcement, from_sentence: int, cut: Cut) -> None:
        ann.status = AnnouncementStatus.INTERRUPTED
        remaining = len(ann.sentences) - from_sentence
        ann.cancel_synthesis()
        if self.settings.announcements.interrupted != "resume" or remaining <= 0:
            self._cancelled(ann, cut.value)
            return
        ann.cursor += from_sentence
        ann.t_started = ann.t_first_audio = None
        ann.status = AnnouncementStatus.QUEUED
        self.queue.requeue(ann)  # spooled with its cursor: a crash now replays only what is left
        self._emit(ann, "queued", f"{cut.value}; resumes from sentence {ann.cursor + 1}")

    def _cancelled(self, ann: Announcement, why: str) -> None:
        ann.cancel_synthesis()
        ann.status = AnnouncementStatus.CANCELLED
        self.queue.discard(ann)
        self._emit(ann, "cancelled", why)

    def _fail(self, ann: Announcement, why: str) -> None:
        ann.cancel_synthesis()
        ann.status = AnnouncementStatus.FAILED
        self.queue.discard(ann)
        self._emit(ann, "error", why)

    def _failed(self, ann: Announcement, why: str) -> None:
        """Synthesis of `ann` failed: the current one is cut first, a waiting one fails at once."""
        log.warning("%s: synthesis failed: %s", ann.id, why)
        if ann is self.current:
            ann.error = why
            self._cut(ann, Cut.FAILURE)
            return
        self.ahead.pop(ann.id, None)
        self.queue.remove(ann.id)
        self._fail(ann, why)

    # ---- choosing what speaks ----

    def _choose(self, now: float) -> None:
        current = self.current
        if current is None:
            if self.accepting:
                self._start(self.queue.pop_next(now))
            return
        waiting = self.queue.ordered(now)
        if not waiting or current.cut not in (None, Cut.TAKEOVER):
            return
        top = waiting[0]
        if not top.interrupt or _level(top) <= _level(current):
            return
        if top.priority == "emergency":  # also when a priority one already takes over at a boundary
            log.info("%s: emergency %s barges in", current.id, top.id)
            self._cut(current, Cut.BARGE_IN)
        elif current.cut is None:
            self.handling = current
            self.synthesis.take_over(current)

    def _start(self, ann: Announcement | None) -> None:
        if ann is None:
            return
        self.handling = ann
        self.ahead.pop(ann.id, None)
        if not ann.sentences:
            self.synthesis.prepare(ann, use_cache=True)
        if ann.buffer is None:
            ann.buffer = PcmBuffer()
        threshold = self.synthesis.start_threshold(ann, self.settings.audio.jitter_buffer_ms)
        ann.track = Track(ann.id, ann.buffer, ann.priority, ann.volume, ann.chime, start_threshold=threshold)
        ann.status = AnnouncementStatus.PLAYING
        ann.t_started = ann.t_first_audio = None
        self.current = ann
        log.info("%s: playing (%s, %d sentences)", ann.id, ann.priority, len(ann.sentences))
        self.playback.play_next(ann.track)
        self._on_change()

    def _cut(self, ann: Announcement, cut: Cut) -> None:
        """Cut the playing announcement within one audio block; its synthesis is cancelled at once."""
        if ann.cut in (Cut.BARGE_IN, Cut.STOP, Cut.SHUTDOWN, Cut.FAILURE) and cut is not Cut.FAILURE:
            return  # already being cut
        ann.cut = cut
        if cut is Cut.BARGE_IN:
            ann.status = AnnouncementStatus.INTERRUPTED
        for handle in ann.handles():
            handle.cancel()
        if ann.track is not None:
            ann.track.cut(keep_partial=cut is not Cut.SHUTDOWN)  # half-said at shutdown is no recording

    def _submit(self, now: float) -> None:
        """Submit what is due: the current announcement's sentences, then (unless stopping) the queue's."""
        current = self.current
        plan = [current] if current is not None and current.cut in (None, Cut.TAKEOVER) else []
        if self.accepting:
            plan += [a for a in self.queue.ordered(now) if a is not current]
        for ann in self.synthesis.submit_due(plan, MODEL_RATE):
            if ann.status is AnnouncementStatus.FAILED:
                self._failed(ann, ann.error or "synthesis could not start")
            elif ann is not self.current and ann.id not in self.ahead:
                ann.status = AnnouncementStatus.SYNTHESIZING
                self.ahead[ann.id] = ann

    # ---- shutdown and supervision ----

    def drain(self, finish: bool, timeout: float) -> bool:
        """Shutdown (any thread): the loop starts nothing new and finishes or cuts what plays.

        Returns True once nothing plays; False after `timeout` (a wedged loop is left behind).
        """
        self._commands.append(_Shutdown(finish))
        self.wake()
        deadline = time.monotonic() + timeout
        while (self.current is not None or self.accepting or self.ahead) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.current is None

    def fail_handling(self, exc: BaseException) -> str | None:
        """After a crash of the loop: the announcement it was handling fails; returns its id."""
        ann = self.handling or self.synthesis.submitting
        self.handling = self.synthesis.submitting = None
        if ann is None:
            return None
        if ann is self.current:
            self.current = None
            if ann.track is not None:
                ann.track.cut()
        self.ahead.pop(ann.id, None)
        self.queue.remove(ann.id)
        try:
            self._fail(ann, f"{type(exc).__name__}: {exc}")
        except Exception:  # the failure report itself failed (e.g. an id MQTT cannot carry)
            log.exception("%s: could not report the failure", ann.id)
        return ann.id

    def _report_quarantined(self) -> None:
        while self.queue.quarantined:
            ann = self.queue.quarantined.pop(0)
            ann.status = AnnouncementStatus.FAILED
            attempts = self.settings.announcements.max_attempts
            self._emit(ann, "error", f"quarantined: the daemon stopped {attempts} times while it played")

    def _emit(self, ann: Announcement, event: str, reason: str = "") -> None:
        log.info("%s: %s%s", ann.id, event, f" ({reason})" if reason else "")
        for message in announcement_events(ann, event, reason, self._clock()):
            self.publish(message)
        self._on_change()


@dataclass(frozen=True)
class _Shutdown:
    finish: bool


def _level(ann: Announcement) -> int:
    return PRIORITIES.index(ann.priority)
