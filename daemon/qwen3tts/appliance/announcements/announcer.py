"""The announcer: the one loop that changes the queue and every announcement.

Other threads never touch either: the MQTT intake hands accepted announcements and stop / volume / voice
commands to `enqueue()` / `stop()` / `set_volume()` / `set_voice()`, which put them in the announcer's one
inbox; the announcer applies them on its own thread and answers from the result (events, and the
command's answer). Playback progress comes back through the track, the one object shared with the audio
thread.

Each turn: apply what is in the inbox (commands.py); expire; move PCM from engine handles into tracks
(never blocking); follow the playing tracks and end them (endings.py); choose what speaks next and where,
or barge in (choosing.py); submit the pieces that are due (lookahead.py). An exception while handling one
announcement fails that announcement only (an `error` event) and the loop goes on. The announcer makes
its collaborators and holds what they share: the queue, the plays (play.py) and the reporter of events
and spool writes (reporter.py).

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
from collections.abc import Callable, Collection, Mapping

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.choosing import Choosing
from qwen3tts.appliance.announcements.commands import Answer, Commands
from qwen3tts.appliance.announcements.endings import Endings
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.play import Play, Plays
from qwen3tts.appliance.announcements.queue import AnnouncementQueue, SpooledCheck
from qwen3tts.appliance.announcements.reporter import OnEvent, Reporter
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import DEFAULT_ZONE
from qwen3tts.appliance.systemd.supervisor import isolated
from qwen3tts.errors import RequestError
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

BUSY_TICK_S = 0.02  # while anything is synthesised or played: how often PCM and progress are read
IDLE_TICK_S = 0.25
SPOOL_RETRY_S = 1.0
"""How often a spool removal that failed (a read-only or full disk) is tried again."""
INBOX_PER_TURN = 32  # commands applied per turn, so a flood of messages never stalls the audio
INBOX_LIMIT = 32  # a poster waits while this many commands wait: back-pressure on the intake, not a drop
INBOX_WAIT_S = 5.0  # ... at most this long (a wedged announcer must not wedge its posters too)

__all__ = ["Announcer", "Answer", "OnEvent"]


class Announcer:
    """Owns the queue, the plays and the look-ahead; `run()` is its supervised loop.

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
        self.queue = queue
        self.lookahead = lookahead
        self.playbacks = dict(playback) if isinstance(playback, Mapping) else {DEFAULT_ZONE: playback}
        """The audio thread of each zone, by zone name, in configuration order."""
        self.plays = Plays()
        self.reporter = Reporter(on_event, zone_count=len(self.playbacks), on_change=on_change)
        resume = settings.announcements.interrupted == "resume"
        self.endings = Endings(queue, self.plays, lookahead, self.reporter, resume=resume, clock=clock)
        self.choosing = Choosing(queue, self.plays, lookahead, self.playbacks, self.endings, self.reporter,
                                 volume=settings.audio.volume, muted=settings.audio.muted)  # fmt: skip
        self.commands = Commands(queue, self.plays, self.choosing, self.endings, self.reporter,
                                 lookahead.defaults, clock=clock)  # fmt: skip
        self._clock = clock
        self._beat = heartbeat
        self._inbox: deque[Callable[[], None]] = deque()
        self._inbox_room = threading.Condition()
        self._wake = threading.Event()
        self._drained = threading.Event()
        self._replayed = False
        self._retry_at = 0.0

    # ---- read by other threads (status, metrics) and by tests ----

    @property
    def playing(self) -> list[Play]:
        """What plays now, in the order it started."""
        return self.plays.playing

    @property
    def current(self) -> Play | None:
        return self.plays.current

    @property
    def current_id(self) -> str | None:
        current = self.current
        return current.id if current is not None else None

    @property
    def current_from_cache(self) -> bool:
        current = self.current
        return current is not None and current.from_cache

    @property
    def volume(self) -> float:
        """Master volume 0..1 (`volume/set`, SIGHUP); applies from the next announcement."""
        return self.choosing.volume

    def play_of(self, ann_id: str) -> Play | None:
        """The play of an announcement, playing or prepared ahead (the announcer's thread, or a test
        that drives `turn()`)."""
        return self.plays.of(ann_id)

    def zone_states(self) -> dict[str, dict[str, object]]:
        """Per zone: `speaking` with the id playing there, or `idle` (for the status; any thread)."""
        states: dict[str, dict[str, object]] = {
            zone: {"state": "idle", "current_id": None} for zone in self.playbacks
        }
        for play in list(self.plays.playing):
            for zone in play.zones:
                states[zone] = {"state": "speaking", "current_id": play.id}
        return states

    # ---- posted from other threads (carried out by `Commands` on the announcer's thread) ----

    def enqueue(
        self, ann: Announcement, redelivered: bool = False, ack: Callable[[], object] | None = None
    ) -> None:
        """Queue an accepted announcement: its text is read here, on the caller's thread (`LookAhead.read`);
        it is spooled on the announcer's thread, then `ack` acknowledges the MQTT message it came in (QoS
        1), once, after the spool write or the refusal."""
        self._post(self.commands.enqueue, self.lookahead.read(ann), redelivered, ack)

    def stop(self, scope: str, ann_id: str | None, answer: Answer) -> None:
        """`current`, `all` (waiting ones too) or `id`: cut or cancel, then answer."""
        self._post(self.commands.stop, scope, ann_id, answer)

    def set_volume(self, volume: float, answer: Answer | None = None) -> None:
        self._post(self.commands.set_volume, volume, answer)

    def set_muted(self, muted: bool) -> None:
        self._post(self.commands.set_muted, muted)

    def set_gain(self, ann_id: str, gain: float) -> None:
        """The own volume of one announcement, waiting or playing (a renderer's volume and mute)."""
        self._post(self.commands.set_gain, ann_id, gain)

    def set_voice(self, voice: str, answer: Answer | None = None) -> None:
        """The default voice (a name the intake checked against the voice catalog)."""
        self._post(self.commands.set_defaults, {"voice": voice}, answer)

    def set_defaults(self, changes: dict[str, object]) -> None:
        """Default voice / language / instruct fields a reload changed."""
        self._post(self.commands.set_defaults, changes, None)

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
        self._post(self.commands.shut_down, finish)
        return self._drained.wait(timeout)

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
        self.replay()  # unless the service did, before it started this thread
        while not stop.is_set():
            self._wake.clear()
            self.turn()
            busy = bool(self.plays.playing) or bool(self._inbox)
            self._wake.wait(BUSY_TICK_S if busy else IDLE_TICK_S)
        self.queue.spool.retry()  # a last try before the restart: the disk may have healed meanwhile

    def turn(self) -> None:
        self._beat()
        for _ in range(min(len(self._inbox), INBOX_PER_TURN)):
            command = self._inbox.popleft()
            with isolated(f"the announcer's command {command.func.__name__}", lambda exc: None):
                command()  # an announcement's own failure is its event (Commands.enqueue); the rest is logged
        with self._inbox_room:
            self._inbox_room.notify_all()
        now = self._clock()
        if self.queue.spool.pending and now >= self._retry_at:  # ended ones whose file is still there
            self._retry_at = now + SPOOL_RETRY_S
            self.queue.spool.retry()
        for ann in self.queue.expired(now):
            with self.endings.isolated(ann, "expiring"):
                self.endings.expire(ann)
        for play in self.plays.synthesising():
            with self.endings.isolated(play.ann, "moving its audio"):
                self._move_pcm(play)
        for play in list(self.plays.playing):
            with self.endings.isolated(play.ann, "following its playback"):
                self.endings.follow(play)
        if self.commands.accepting:
            self.choosing.choose(now)
        self._submit(now)
        if not self.commands.accepting and not self.plays.playing:
            self._drained.set()

    def replay(self, check: SpooledCheck | None = None, ended: Collection[str] = ()) -> None:
        """Load the spool of the previous process, once: what was waiting waits again, its text read on
        this thread (the service calls it before the announcer's thread starts); the rest is reported.
        `check` is the door's validation of a spooled entry, `ended` the ids whose end is owed
        (queue.py `replay`)."""
        if self._replayed:
            return
        self._replayed = True
        _, expired = self.queue.replay(self._clock(), read=self.lookahead.read, check=check, ended=ended)
        for ann in expired:
            self.reporter.emit(ann, "expired", "expired while the appliance was down")
        for ann, why in self.queue.quarantined:
            self.reporter.emit(ann, "error", f"quarantined: {why}")

    # ---- synthesis ----

    def _move_pcm(self, play: Play) -> None:
        try:
            self.lookahead.move_pcm(play)
        except RequestError as exc:
            self.endings.synthesis_failed(play.ann, str(exc))

    def _submit(self, now: float) -> None:
        """Submit what is due: the playing announcements' pieces, then (unless stopping) the queue's."""
        plan = [play for play in self.plays.playing if play.cut in (None, Cut.TAKEOVER)]
        for ann in self.queue.ordered(now) if self.commands.accepting else []:
            play = self.plays.ahead.get(ann.id)
            if play is None:
                with self.endings.isolated(ann, "preparing its text"):
                    try:
                        play = self.plays.ahead[ann.id] = self.lookahead.prepare(ann, use_cache=True)
                    except RequestError as exc:
                        self.endings.synthesis_failed(ann, str(exc))
            if play is not None and ann.id in self.plays.ahead:
                plan.append(play)
        speech = [play for play in plan if play.ann.media is None]  # media has nothing to synthesise
        for play in self.lookahead.submit_due(speech):
            if play.error is not None and play.cut is None:
                self.endings.synthesis_failed(play.ann, play.error)
