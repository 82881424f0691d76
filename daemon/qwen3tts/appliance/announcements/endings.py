"""How a play ends, and the events it sends on the way.

`Endings` follows each playing track (started once every zone started it, first_audio, an `error` for a
zone whose output failed while the others play on) and, once its last sample was heard in every zone,
reports it finished (in the zones that played), interrupted (waiting again from the piece it was in, or
cancelled), cancelled or failed (when every zone failed). It also ends announcements that never play: cut,
expired, cancelled while waiting, failed. Runs on the announcer's thread only (announcer.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.media import NOT_KEPT, interrupted_reason
from qwen3tts.appliance.announcements.play import Play, Plays
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.announcements.reporter import Reporter
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.systemd.supervisor import isolated

log = logging.getLogger(__name__)

CUT_STRENGTH = (Cut.TAKEOVER, Cut.BARGE_IN, Cut.SHUTDOWN, Cut.STOP, Cut.FAILURE)
"""Why a play is cut, weakest first; a stronger reason overrides a weaker one while the play fades out
(a stop during a barge-in or a shutdown: it is gone, not resumed nor kept to replay)."""


class Endings:
    """Playback progress -> events; the end of a play or of an announcement -> the queue and its event.

    `resume` is whether an interrupted announcement waits again (`announcements.interrupted: resume`)
    or is cancelled.
    """

    def __init__(
        self, queue: AnnouncementQueue, plays: Plays, lookahead: LookAhead, reporter: Reporter, *,
        resume: bool = True, clock: Callable[[], float],
    ):  # fmt: skip
        self.queue = queue
        self.plays = plays
        self.lookahead = lookahead
        self.reporter = reporter
        self.resume = resume
        self.clock = clock

    # ---- a playing track ----

    def follow(self, play: Play) -> None:
        """Read the play's progress from its track: its events, and its end once the track ended."""
        track = play.track
        zones = track.zones()
        if play.t_started is None and all(p.t_started is not None for p in zones.values()):
            play.t_started = track.t_started
            started = tuple(zone for zone, heard in zones.items() if heard.error is None)
            self.reporter.emit(play.ann, "started", "", play.reading, play, zones=started)
        if track.t_first_audio is None:
            track.set_start_threshold(self.lookahead.start_threshold(play))
        elif play.t_first_audio is None:
            play.t_first_audio = track.t_first_audio
            self.reporter.emit(play.ann, "first_audio", play=play)
        self._zone_failures(play, zones)
        if track.ended:
            try:
                self._report_end(play, track)
            finally:
                self._stopped_playing(play)  # only now: drain() waits for it, so the last event is out first
            self.reporter.on_change()

    def _zone_failures(self, play: Play, zones: dict) -> None:
        """An `error` for each zone whose output failed while others play on (said once per zone)."""
        failed = {zone: heard.error for zone, heard in zones.items() if heard.error is not None}
        if len(failed) == len(zones):
            return  # every zone failed: the play failed as a whole, its end says so
        for zone, error in failed.items():
            if zone not in play.zone_errors:
                play.zone_errors[zone] = error
                self.reporter.emit(play.ann, "error", f"zone {zone}: {error}", play=play, zone=zone)

    def _stopped_playing(self, play: Play) -> None:
        if play in self.plays.playing:
            self.plays.playing.remove(play)

    def _report_end(self, play: Play, track: Track) -> None:
        if play.cut is Cut.SHUTDOWN and not play.ann.spooled:
            self._cancelled(play, NOT_KEPT)
        elif play.cut is Cut.SHUTDOWN:
            log.info("%s: cut by the shutdown; it stays spooled", play.id)
            play.drop()
            self.reporter.spool_write("keep the cut announcement", self.queue.release, play.ann)
        elif track.error is not None or play.cut is Cut.FAILURE:
            self.fail_now(play.ann, play.error or track.error or "playback failed")
        elif play.cut is Cut.BARGE_IN:
            self._interrupted(play, self.lookahead.piece_playing(play), Cut.BARGE_IN)
        elif play.cut is Cut.TAKEOVER and track.played_out:
            self._interrupted(play, play.cut_at or 0, Cut.TAKEOVER)
        elif play.cut is not None:
            self._cancelled(play, play.cut.value)
        else:
            self._finished(play, track)

    def _finished(self, play: Play, track: Track) -> None:
        play.t_finished = track.t_ended
        played = tuple(zone for zone, heard in track.zones().items() if heard.played_out)
        now = self.clock()
        record = ("record the end", self.queue.done, play.ann, now)
        if self.queue.repeats(play.ann, now):
            _, again = self.reporter.spool_write(*record)
            self._played(play, plays_again=again is not None)
            self.reporter.emit(play.ann, "finished", "repeats later" if again else "", play.runaway, play,
                               zones=played)  # fmt: skip
            return
        self._played(play, plays_again=False)
        self.reporter.end(play.ann, "finished", "", record, play.runaway, play, zones=played)

    def _played(self, play: Play, *, plays_again: bool) -> None:
        if self.lookahead.replay is not None:
            self.lookahead.replay.keep(play, plays_again=plays_again)  # played out, not cut
        play.drop()

    def _interrupted(self, play: Play, from_piece: int, cut: Cut) -> None:
        remaining = len(play.pieces) - from_piece
        play.drop()
        if not self.resume or remaining <= 0:
            self._cancelled(play, cut.value)
            return
        cursor = play.first + from_piece
        self.reporter.spool_write("keep the interrupted announcement", self.queue.requeue, play.ann, cursor)
        reason = interrupted_reason(play.ann, cut, cursor)
        self.reporter.emit(play.ann, "queued", reason, zones=play.zones)

    def _cancelled(self, play: Play, why: str) -> None:
        play.drop()
        self.gone(play.ann)
        forget = ("remove a cancelled announcement", self.queue.discard, play.ann)
        self.reporter.end(play.ann, "cancelled", why, forget, play=play, zones=play.zones)

    # ---- cuts and failures ----

    def isolated(self, ann: Announcement, doing: str):
        """A context in which an exception fails `ann` alone (an `error` event) and is logged once."""
        return isolated(f"{ann.id}: {doing}", lambda exc: self.fail_now(ann, f"{type(exc).__name__}: {exc}"))

    def cut(self, play: Play, cut: Cut) -> None:
        """Cut a play within one audio block; its synthesis is cancelled at once.

        While it fades out a stronger reason replaces a weaker one (a stop during a barge-in stops it
        for good); never the other way round. Its end is reported once the audio thread ended it.
        """
        if play.cut is not None and CUT_STRENGTH.index(cut) <= CUT_STRENGTH.index(play.cut):
            return  # already being cut for this reason or a stronger one
        play.cut = cut
        play.cancel_from(0)
        # a cut play is not published as a recording (a WAV file): only a failed one, with what a
        # speaker heard, and plays that ended in order are (docs/operations.md)
        play.track.cut(keep_partial=cut is Cut.FAILURE)

    def synthesis_failed(self, ann: Announcement, why: str) -> None:
        """The engine refused or failed a piece: a playing one is cut first (its end reports it)."""
        log.warning("%s: synthesis failed: %s", ann.id, why)
        playing = self.plays.playing_one(ann.id)
        if playing is not None:
            playing.error = why
            self.cut(playing, Cut.FAILURE)
        else:
            self.fail_now(ann, why)

    def fail_now(self, ann: Announcement, why: str) -> None:
        """`ann` ends in error at once, wherever it is (a bug while handling it, a refused piece)."""
        play = self.plays.of(ann.id)
        if play in self.plays.playing:
            self._stopped_playing(play)
            if not play.track.ended:  # still playing: a bug stops it unrecorded
                play.track.cut(keep_partial=False)
        if play is not None:
            play.drop()
        self.gone(ann)
        forget = ("remove a failed announcement", self.queue.discard, ann)
        self.reporter.end(ann, "error", why, forget, play=play, zones=play.zones if play is not None else ())

    # ---- announcements that end while they wait ----

    def cancel_waiting(self, ann: Announcement, why: str = "stop") -> None:
        self.gone(ann)
        self.reporter.end(ann, "cancelled", why, ("remove a cancelled announcement", self.queue.discard, ann))

    def expire(self, ann: Announcement) -> None:
        """A waiting announcement whose time ran out: removed, its synthesis cancelled, `expired`."""
        self.gone(ann)
        forget = ("remove an expired announcement", self.queue.discard, ann)
        self.reporter.end(ann, "expired", "time to live ran out before it could play", forget)

    def gone(self, ann: Announcement) -> None:
        """`ann` will not play again: its play ahead is dropped, and the rendition kept for its repeats."""
        self.plays.drop_ahead(ann)
        if self.lookahead.replay is not None:
            self.lookahead.replay.forget(ann.id)
