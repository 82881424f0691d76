"""The announcer: the one loop that changes the queue and every announcement.

Other threads never touch either: the MQTT intake hands accepted announcements and stop / volume / voice
commands to `enqueue()` / `stop()` / `set_volume()` / `set_voice()`, which put them in the announcer's one
inbox; the announcer applies them on its own thread and answers from the result (events, and the
command's answer). Playback progress comes back through the track, the one object shared with the audio
thread.

Each turn: apply what is in the inbox; expire; move PCM from engine handles into tracks (never blocking);
follow the playing track and emit events; choose what speaks next or barge in; submit the pieces that are
due (lookahead.py). An exception while handling one announcement fails that announcement only (an `error`
event) and the loop goes on.

Priorities, as in PA paging: an emergency that may interrupt cuts the current announcement within one
audio block (barge-in); a priority announcement takes over at the next sentence boundary. The interrupted
one waits again from the piece it was in (`interrupted: resume`, a second `queued` event) or is cancelled.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from qwen3tts.appliance.announcements.announcement import Announcement, AnnouncementStatus, Cut
from qwen3tts.appliance.announcements.commands import Answer, CommandsMixin
from qwen3tts.appliance.announcements.endings import EndingsMixin
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import HowToPlay
from qwen3tts.appliance.systemd.supervisor import isolated
from qwen3tts.engine.sequence import Priority
from qwen3tts.errors import RequestError
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

BUSY_TICK_S = 0.02  # while anything is synthesised or played: how often PCM and progress are read
IDLE_TICK_S = 0.25
INBOX_PER_TURN = 32  # commands applied per turn, so a flood of messages never stalls the audio
INBOX_LIMIT = 32  # a poster waits while this many commands wait: back-pressure on the intake, not a drop
INBOX_WAIT_S = 5.0  # ... at most this long (a wedged announcer must not wedge its posters too)

CUT_STRENGTH = (Cut.TAKEOVER, Cut.BARGE_IN, Cut.SHUTDOWN, Cut.STOP, Cut.FAILURE)
"""Why a play is cut, weakest first; a stronger reason overrides a weaker one while the play fades out
(a stop during a barge-in or a shutdown: it is gone, not resumed nor kept to replay)."""

OnEvent = Callable[[Announcement, str, str, tuple[str, ...]], None]
"""on_event(announcement, event, reason, warnings): `queued`, `started`, ... `error` (docs/mqtt.md)."""

__all__ = ["Announcer", "Answer"]


class Announcer(CommandsMixin, EndingsMixin):
    """Owns the queue, the current announcement and the look-ahead; `run()` is its supervised loop."""

    def __init__(
        self,
        settings: Settings,
        queue: AnnouncementQueue,
        lookahead: LookAhead,
        playback: Playback,
        on_event: OnEvent,
        *,
        clock: Callable[[], float] = time.time,
        heartbeat: Callable[[], None] = lambda: None,
        on_change: Callable[[], None] = lambda: None,
    ):
        self.settings = settings
        self.queue = queue
        self.lookahead = lookahead
        self.playback = playback
        self.on_event = on_event
        self.volume = settings.audio.volume
        """Master volume 0..1 (`volume/set`, SIGHUP); applies from the next announcement."""
        self.muted = settings.audio.muted
        self._clock = clock
        self._beat = heartbeat
        self._on_change = on_change
        self.current: Announcement | None = None
        self.accepting = True
        self._inbox: deque[Callable[[], None]] = deque()
        self._inbox_room = threading.Condition()
        self._wake = threading.Event()
        self._drained = threading.Event()
        self._replayed = False
        self._spool_trouble: str | None = None

    # ---- read by other threads (status, metrics) ----

    @property
    def current_id(self) -> str | None:
        current = self.current
        return current.id if current is not None else None

    @property
    def current_from_cache(self) -> bool:
        current = self.current
        return current is not None and current.from_cache

    # ---- the inbox (any thread) ----

    def wake(self) -> None:
        self._wake.set()

    def _post(self, command: Callable[..., None], *args) -> None:
        """Queue a command for the loop; waits while the inbox is full, so a flood of messages slows the
        intake (and through it the broker) instead of piling up answers nobody can publish."""
        with self._inbox_room:
            self._inbox_room.wait_for(lambda: len(self._inbox) < INBOX_LIMIT, INBOX_WAIT_S)
            self._inbox.append(functools.partial(command, *args))
        self._wake.set()

    # ---- the loop ----

    def run(self, stop: threading.Event) -> None:
        if not self._replayed:
            self._replayed = True
            self._replay()
        while not stop.is_set():
            self._wake.clear()
            self.turn()
            busy = self.current is not None or bool(self._inbox)
            self._wake.wait(BUSY_TICK_S if busy else IDLE_TICK_S)

    def turn(self) -> None:
        self._beat()
        for _ in range(min(len(self._inbox), INBOX_PER_TURN)):
            command = self._inbox.popleft()
            with isolated(f"the announcer's command {command.func.__name__}", lambda exc: None):
                command()  # an announcement's own failure is its event (_enqueue); the rest is logged
        with self._inbox_room:
            self._inbox_room.notify_all()
        now = self._clock()
        self._expire(now)
        for ann in self._synthesising():
            with self._isolated(ann, "moving its audio"):
                self._move_pcm(ann)
        if self.current is not None:
            with self._isolated(self.current, "following its playback"):
                self._follow_playback(self.current)
        self._choose(now)
        self._submit(now)
        if not self.accepting and self.current is None:
            self._drained.set()

    def _synthesising(self) -> list[Announcement]:
        waiting = [a for a in self.queue.waiting() if a.handles]
        return [self.current, *waiting] if self.current is not None else waiting

    def _isolated(self, ann: Announcement, doing: str):
        return isolated(f"{ann.id}: {doing}", lambda exc: self._fail_now(ann, f"{type(exc).__name__}: {exc}"))

    # ---- start, expiry ----

    def _replay(self) -> None:
        """The spool of the previous process: what was waiting waits again; the rest is reported."""
        now = self._clock()
        _, expired = self.queue.replay(now)
        for ann in expired:
            ann.status = AnnouncementStatus.EXPIRED
            self._emit(ann, "expired", "expired while the appliance was down")
        attempts = self.queue.max_attempts
        for ann in self.queue.quarantined:
            ann.status = AnnouncementStatus.FAILED
            self._emit(ann, "error", f"quarantined: the daemon stopped {attempts} times while it played")

    def _expire(self, now: float) -> None:
        for ann in self.queue.expired(now):
            with self._isolated(ann, "expiring"):
                ann.forget_synthesis()
                ann.status = AnnouncementStatus.EXPIRED
                self._spool_write("remove an expired announcement", self.queue.discard, ann)
                self._emit(ann, "expired", "time to live ran out before it could play")

    # ---- PCM ----

    def _move_pcm(self, ann: Announcement) -> None:
        try:
            self.lookahead.move_pcm(ann)
        except RequestError as exc:
            self._synthesis_failed(ann, str(exc))

    # ---- choosing what speaks ----

    def _choose(self, now: float) -> None:
        current = self.current
        waiting = self.queue.ordered(now)
        if current is None:
            if self.accepting and waiting:
                with self._isolated(waiting[0], "starting"):
                    self._start(waiting[0])
            return
        if not waiting or current.cut not in (None, Cut.TAKEOVER):
            return
        top = waiting[0]
        if not top.interrupt or top.priority <= current.priority:
            return
        if top.priority is Priority.EMERGENCY:  # also when a priority one already takes over at a boundary
            log.info("%s: emergency %s barges in", current.id, top.id)
            self._cut(current, Cut.BARGE_IN)
        elif current.cut is None:
            with self._isolated(current, "handing over"):
                self.lookahead.take_over(current)

    def _start(self, ann: Announcement) -> None:
        if not self._spool_write("record the attempt", self.queue.pop, ann):
            ann.forget_synthesis()
            ann.status = AnnouncementStatus.FAILED
            self._emit(ann, "error", f"spool write failed: {self._spool_trouble}")
            return
        if not ann.pieces:
            try:
                self.lookahead.prepare(ann, use_cache=True)
            except RequestError as exc:  # text it cannot speak: the same error as when it waits
                self._fail_now(ann, str(exc))
                return
        ann.track.how = HowToPlay(ann.priority, ann.chime, self._gain(ann))
        ann.track.set_start_threshold(self.lookahead.start_threshold(ann))
        ann.status = AnnouncementStatus.PLAYING
        ann.t_started = ann.t_first_audio = None
        self.current = ann
        log.info("%s: playing (%s, %d sentences)", ann.id, ann.priority.label, len(ann.pieces))
        self.playback.play_next(ann.track)
        self._on_change()

    def _gain(self, ann: Announcement) -> float:
        """Emergency plays at its own volume (full scale by default), ignoring master volume and mute."""
        own = 1.0 if ann.volume is None else ann.volume
        if ann.priority is Priority.EMERGENCY:
            return own
        return 0.0 if self.muted else own * self.volume

    def _cut(self, ann: Announcement, cut: Cut) -> None:
        """Cut the playing announcement within one audio block; its synthesis is cancelled at once.

        While it fades out a stronger reason replaces a weaker one (a stop during a barge-in stops it
        for good); never the other way round.
        """
        if ann.cut is not None and CUT_STRENGTH.index(cut) <= CUT_STRENGTH.index(ann.cut):
            return  # already being cut for this reason or a stronger one
        ann.cut = cut
        if cut is Cut.BARGE_IN:
            ann.status = AnnouncementStatus.INTERRUPTED
        for handle in ann.handles.values():
            handle.cancel()
        if ann.track is not None:
            # a cut play is not published as a recording (a WAV file): only a failed one, with what
            # a speaker heard, and plays that ended in order are (docs/operations.md)
            ann.track.cut(keep_partial=cut is Cut.FAILURE)

    def _submit(self, now: float) -> None:
        """Submit what is due: the current announcement's pieces, then (unless stopping) the queue's."""
        current = self.current
        plan = [current] if current is not None and current.cut in (None, Cut.TAKEOVER) else []
        if self.accepting:
            plan += [a for a in self.queue.ordered(now) if a is not current]
        for ann in [a for a in plan if not a.pieces]:
            with self._isolated(ann, "preparing its text"):
                try:
                    self.lookahead.prepare(ann, use_cache=True)
                except RequestError as exc:
                    self._synthesis_failed(ann, str(exc))
        plan = [a for a in plan if a.pieces and a.status is not AnnouncementStatus.FAILED]
        for ann in self.lookahead.submit_due(plan):
            if ann.error is not None and ann.cut is None:
                self._synthesis_failed(ann, ann.error)
            elif ann is not self.current:
                ann.status = AnnouncementStatus.SYNTHESIZING

    # ---- helpers ----

    def _spool_write(self, what: str, change: Callable, *args) -> object:
        """Apply a queue change that writes the spool; on OSError say so once and go on (returns None)."""
        try:
            result = change(*args)
        except OSError as exc:
            trouble = exc.strerror or str(exc)
            if trouble != self._spool_trouble:
                log.error("spool: cannot %s: %s (what is not written replays after a restart)", what, trouble)
            self._spool_trouble = trouble
            return None
        self._spool_trouble = None
        return True if result is None else result

    def _emit(self, ann: Announcement, event: str, reason: str = "", warnings: tuple[str, ...] = ()) -> None:
        detail = reason or (f"{ann.priority.label}, {len(ann.text)} characters" if event == "queued" else "")
        log.info("%s: %s%s", ann.id, event, f" ({detail})" if detail else "")
        self.on_event(ann, event, reason, warnings)
        self._on_change()
