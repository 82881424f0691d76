"""The announcer: the one loop that changes the queue and every announcement.

Other threads never touch either: the MQTT intake hands accepted announcements and stop / volume / voice
commands to `enqueue()` / `stop()` / `set_volume()` / `set_voice()`, which put them in the announcer's one
inbox; the announcer applies them on its own thread and answers from the result (events, and the
command's answer). Playback progress comes back through the track, the one object shared with the audio
thread.

Each turn: apply what is in the inbox; expire; move PCM from engine handles into tracks (never blocking);
follow the playing tracks and emit events; choose what speaks next and where, or barge in (choosing.py);
submit the pieces that are due (lookahead.py). An exception while handling one announcement fails that
announcement only (an `error` event) and the loop goes on.

Zones: a box plays in one or more zones, each with its own audio thread (a `Playback`). An announcement is
synthesised once and played in every zone it addresses from the same track; several announcements may play
at once in disjoint zones (`playing`). Priorities work per zone, as in PA paging: an emergency that may
interrupt cuts every playing announcement that shares a zone with it within one audio block (barge-in); a
priority announcement takes over at the next sentence boundary. The interrupted one is cut as a whole, in
all its zones, and waits again from the piece it was in (`interrupted: resume`, a second `queued` event) or
is cancelled.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.choosing import ChoosingMixin
from qwen3tts.appliance.announcements.commands import Answer, CommandsMixin
from qwen3tts.appliance.announcements.endings import EndingsMixin
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.play import Play
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import DEFAULT_ZONE
from qwen3tts.appliance.systemd.supervisor import isolated
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

OnEvent = Callable[..., None]
"""on_event(announcement, event, reason, warnings, play=, **zones): `queued`, `started`, ... `error`
(docs/mqtt.md); `play=` is the play the step is part of (its times, whether it came from the cache) or
None, `zones=` names the zones a step concerns, `zone=` the one zone whose output failed while the others
play."""

__all__ = ["Announcer", "Answer"]


class Announcer(ChoosingMixin, CommandsMixin, EndingsMixin):
    """Owns the queue, the playing announcements and the look-ahead; `run()` is its supervised loop.

    `playback` is the audio thread of each zone by name, or one Playback (the one zone `default`).
    """

    def __init__(
        self,
        settings: Settings,
        queue: AnnouncementQueue,
        lookahead: LookAhead,
        playback: Playback | Mapping[str, Playback],
        on_event: OnEvent,
        *,
        clock: Callable[[], float] = time.time,
        heartbeat: Callable[[], None] = lambda: None,
        on_change: Callable[[], None] = lambda: None,
    ):
        self.settings = settings
        self.queue = queue
        self.lookahead = lookahead
        self.playbacks = dict(playback) if isinstance(playback, Mapping) else {DEFAULT_ZONE: playback}
        """The audio thread of each zone, by zone name, in configuration order."""
        self.on_event = on_event
        self.volume = settings.audio.volume
        """Master volume 0..1 (`volume/set`, SIGHUP); applies from the next announcement."""
        self.muted = settings.audio.muted
        self._clock = clock
        self._beat = heartbeat
        self._on_change = on_change
        self.playing: list[Play] = []
        """What plays now, in the order it started; their zones never overlap."""
        self._ahead: dict[str, Play] = {}
        """Plays prepared for waiting announcements (their first pieces synthesised ahead), by id."""
        self.accepting = True
        self._inbox: deque[Callable[[], None]] = deque()
        self._inbox_room = threading.Condition()
        self._wake = threading.Event()
        self._drained = threading.Event()
        self._replayed = False
        self._spool_trouble: str | None = None

    # ---- read by other threads (status, metrics) ----

    @property
    def current(self) -> Play | None:
        """The first play now (on a box with one zone: the one that plays)."""
        playing = list(self.playing)
        return playing[0] if playing else None

    @property
    def current_id(self) -> str | None:
        current = self.current
        return current.id if current is not None else None

    @property
    def current_from_cache(self) -> bool:
        current = self.current
        return current is not None and current.from_cache

    def zone_states(self) -> dict[str, dict[str, object]]:
        """Per zone: `speaking` with the id playing there, or `idle` (for the status; any thread)."""
        states: dict[str, dict[str, object]] = {
            zone: {"state": "idle", "current_id": None} for zone in self.playbacks
        }
        for play in list(self.playing):
            for zone in play.zones:
                states[zone] = {"state": "speaking", "current_id": play.id}
        return states

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
            busy = bool(self.playing) or bool(self._inbox)
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
        for play in self._synthesising():
            with self._isolated(play.ann, "moving its audio"):
                self._move_pcm(play)
        for play in list(self.playing):
            with self._isolated(play.ann, "following its playback"):
                self._follow_playback(play)
        self._choose(now)
        self._submit(now)
        if not self.accepting and not self.playing:
            self._drained.set()

    def _synthesising(self) -> list[Play]:
        return [*self.playing, *(play for play in list(self._ahead.values()) if play.handles())]

    def play_of(self, ann_id: str) -> Play | None:
        """The play of an announcement: playing, or prepared ahead while it waits; None without one."""
        playing = next((play for play in self.playing if play.id == ann_id), None)
        return playing or self._ahead.get(ann_id)

    def _drop_ahead(self, ann: Announcement) -> None:
        """Drop the play prepared for a waiting announcement (its synthesis is cancelled)."""
        play = self._ahead.pop(ann.id, None)
        if play is not None:
            play.drop()

    def _gone(self, ann: Announcement) -> None:
        """`ann` will not play again: its play ahead is dropped, and the rendition kept for its repeats."""
        self._drop_ahead(ann)
        if self.lookahead.replay is not None:
            self.lookahead.replay.forget(ann.id)

    def _isolated(self, ann: Announcement, doing: str):
        return isolated(f"{ann.id}: {doing}", lambda exc: self._fail_now(ann, f"{type(exc).__name__}: {exc}"))

    # ---- start, expiry ----

    def _replay(self) -> None:
        """The spool of the previous process: what was waiting waits again; the rest is reported."""
        now = self._clock()
        _, expired = self.queue.replay(now)
        for ann in expired:
            self._emit(ann, "expired", "expired while the appliance was down")
        attempts = self.queue.max_attempts
        for ann in self.queue.quarantined:
            self._emit(ann, "error", f"quarantined: the daemon stopped {attempts} times while it played")

    def _expire(self, now: float) -> None:
        for ann in self.queue.expired(now):
            with self._isolated(ann, "expiring"):
                self._gone(ann)
                self._spool_write("remove an expired announcement", self.queue.discard, ann)
                self._emit(ann, "expired", "time to live ran out before it could play")

    # ---- PCM ----

    def _move_pcm(self, play: Play) -> None:
        try:
            self.lookahead.move_pcm(play)
        except RequestError as exc:
            self._synthesis_failed(play.ann, str(exc))

    # ---- cutting, submitting ----

    def _cut(self, play: Play, cut: Cut) -> None:
        """Cut a play within one audio block; its synthesis is cancelled at once.

        While it fades out a stronger reason replaces a weaker one (a stop during a barge-in stops it
        for good); never the other way round.
        """
        if play.cut is not None and CUT_STRENGTH.index(cut) <= CUT_STRENGTH.index(play.cut):
            return  # already being cut for this reason or a stronger one
        play.cut = cut
        play.cancel_from(0)
        # a cut play is not published as a recording (a WAV file): only a failed one, with what a
        # speaker heard, and plays that ended in order are (docs/operations.md)
        play.track.cut(keep_partial=cut is Cut.FAILURE)

    def _submit(self, now: float) -> None:
        """Submit what is due: the playing announcements' pieces, then (unless stopping) the queue's."""
        plan = [play for play in self.playing if play.cut in (None, Cut.TAKEOVER)]
        for ann in self.queue.ordered(now) if self.accepting else []:
            play = self._ahead.get(ann.id)
            if play is None:
                with self._isolated(ann, "preparing its text"):
                    try:
                        play = self._ahead[ann.id] = self.lookahead.prepare(ann, use_cache=True)
                    except RequestError as exc:
                        self._synthesis_failed(ann, str(exc))
            if play is not None and ann.id in self._ahead:
                plan.append(play)
        for play in self.lookahead.submit_due(plan):
            if play.error is not None and play.cut is None:
                self._synthesis_failed(play.ann, play.error)

    # ---- helpers ----

    def _spool_write(self, what: str, change: Callable, *args) -> tuple[bool, object]:
        """Apply a queue change that writes the spool: (True, its result); on OSError say so once and go
        on: (False, None)."""
        try:
            result = change(*args)
        except OSError as exc:
            trouble = exc.strerror or str(exc)
            if trouble != self._spool_trouble:
                log.error("spool: cannot %s: %s (what is not written replays after a restart)", what, trouble)
            self._spool_trouble = trouble
            return False, None
        self._spool_trouble = None
        return True, result

    def _emit(
        self, ann: Announcement, event: str, reason: str = "", warnings: tuple[str, ...] = (),
        play: Play | None = None, **zones,
    ) -> None:  # fmt: skip
        """One event; `play` (the play it is part of), `zones=` (the zones it concerns) and `zone=` (the
        one that failed) go along."""
        detail = reason or (f"{ann.priority.label}, {len(ann.text)} characters" if event == "queued" else "")
        where = f" in {', '.join(zones['zones'])}" if zones.get("zones") and len(self.playbacks) > 1 else ""
        log.info("%s: %s%s%s", ann.id, event, where, f" ({detail})" if detail else "")
        self.on_event(ann, event, reason, warnings, play=play, **zones)
        self._on_change()
