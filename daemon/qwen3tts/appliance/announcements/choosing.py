"""What starts where, and who barges in: the announcer's choice over the zones of this box.

An announcement plays in its zones (its `zones`, or every zone for an all-call) and starts once every one
of them is free. Walking the waiting announcements in rank order (emergency > priority > normal, first come
first served), one that cannot start yet reserves its zones, so a later one cannot overtake it there; one
whose zones are all free and unreserved starts, so several may play at once in disjoint zones. A waiting
announcement that may interrupt, whose zones are reserved by nobody before it and held only by lower
priorities, interrupts exactly those: an emergency barges in on each (cut within one audio block), a
priority one takes each over at its next sentence boundary. A stream (a renderer's media at BACKGROUND,
media.py) is interrupted by every announcement, `"interrupt": false` or not, and resumes after it. An
emergency on the concourse never cuts a normal announcement on platform 3.

`Choosing` runs on the announcer's thread (announcer.py); it also holds the master volume and mute, which
it puts on each track it starts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.endings import Endings
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.play import Play, Plays
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.announcements.reporter import Reporter
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import HowToPlay
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)


def interrupts(ann: Announcement, playing: Announcement) -> bool:
    """Whether waiting `ann` may interrupt `playing`: a higher priority that may interrupt; and a stream
    (media at BACKGROUND, below every announcement) is interrupted by every announcement."""
    if playing.priority >= ann.priority:
        return False
    return ann.interrupt or playing.priority is Priority.BACKGROUND


class Choosing:
    """Starts announcements in free zones and interrupts lower priorities that hold a zone.

    `playbacks` is the audio thread of each zone by name; `volume` and `muted` the master level at start
    (`volume/set`, `mute`, SIGHUP change them; they apply from the next announcement).
    """

    def __init__(
        self, queue: AnnouncementQueue, plays: Plays, lookahead: LookAhead, playbacks: Mapping[str, Playback],
        endings: Endings, reporter: Reporter, *, volume: float = 1.0, muted: bool = False,
    ):  # fmt: skip
        self.queue = queue
        self.plays = plays
        self.lookahead = lookahead
        self.playbacks = playbacks
        self.endings = endings
        self.reporter = reporter
        self.volume = volume
        self.muted = muted

    def zones_of(self, ann: Announcement) -> tuple[str, ...]:
        """The zones `ann` plays in: its own that this box has, or every zone for an all-call.

        RequestError when it names zones and none of them is a zone of this box (a spooled announcement
        after a configuration change; the intake refuses unknown zones)."""
        if not ann.zones:
            return tuple(self.playbacks)
        known = tuple(zone for zone in ann.zones if zone in self.playbacks)
        if not known:
            raise RequestError(
                f"no zone {', '.join(ann.zones)} on this box (its zones: {', '.join(self.playbacks)})"
            )
        return known

    def choose(self, now: float) -> None:
        """Start what may start now; interrupt what holds a zone a more urgent announcement waits for."""
        held = {zone: play for play in self.plays.playing for zone in play.zones}
        reserved: set[str] = set()
        for ann in self.queue.ordered(now):
            try:
                zones = self.zones_of(ann)
            except RequestError as exc:
                self.endings.fail_now(ann, str(exc))
                continue
            blockers = list(dict.fromkeys(held[zone] for zone in zones if zone in held))
            free = not reserved.intersection(zones)
            if free and not blockers:
                with self.endings.isolated(ann, "starting"):
                    play = self._start(ann, zones)
                    if play is not None:
                        held.update(dict.fromkeys(zones, play))
                continue
            if free:
                self._interrupt(ann, blockers)
            reserved.update(zones)

    def _interrupt(self, ann: Announcement, blockers: list[Play]) -> None:
        """`ann` waits for `blockers` (playing in its zones): interrupt them if it may interrupt each."""
        if not all(interrupts(ann, blocker.ann) for blocker in blockers):
            return
        for blocker in blockers:
            if blocker.cut not in (None, Cut.TAKEOVER):
                continue  # already being cut for good
            if ann.priority is Priority.EMERGENCY:  # also when a priority one already takes over
                log.info("%s: emergency %s barges in", blocker.id, ann.id)
                self.endings.cut(blocker, Cut.BARGE_IN)
            elif blocker.cut is None:
                with self.endings.isolated(blocker.ann, "handing over"):
                    self.lookahead.take_over(blocker)

    def _start(self, ann: Announcement, zones: tuple[str, ...]) -> Play | None:
        """`ann` starts playing in `zones`; None when it could not (it ended with an `error` instead)."""
        written, popped = self.reporter.spool_write("record the attempt", self.queue.pop, ann)
        if not written:
            self.endings.gone(ann)
            self.reporter.emit(ann, "error", f"spool write failed: {self.reporter.trouble}")
            return None
        play = self.plays.ahead.pop(ann.id, None)
        if play is None:
            try:
                play = self.lookahead.prepare(popped, use_cache=True)
            except RequestError as exc:  # text it cannot speak: the same error as when it waits
                self.endings.fail_now(popped, str(exc))
                return None
        play.ann, play.zones = popped, zones
        play.track.attach(zones)
        play.track.how = HowToPlay(ann.priority, ann.chime, self.gain(ann))
        play.track.set_start_threshold(self.lookahead.start_threshold(play))
        self.plays.playing.append(play)
        where = f" in {', '.join(zones)}" if len(self.playbacks) > 1 else ""
        parts = "segments of media" if ann.media is not None else "sentences"
        log.info("%s: playing%s (%s, %d %s)", ann.id, where, ann.priority.label, len(play.pieces), parts)
        for zone in zones:
            self.playbacks[zone].play_next(play.track)
        self.reporter.on_change()
        return play

    def gain(self, ann: Announcement) -> float:
        """Emergency plays at its own volume (full scale by default), ignoring master volume and mute."""
        own = 1.0 if ann.volume is None else ann.volume
        if ann.priority is Priority.EMERGENCY:
            return own
        return 0.0 if self.muted else own * self.volume
