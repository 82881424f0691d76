"""How a play ends, and the events it sends: the announcer follows each playing track (started once every
zone started it, first_audio, an `error` for a zone whose output failed while the others play on) and, once
its last sample was heard in every zone, reports it finished (in the zones that played), interrupted
(waiting again from the piece it was in, or cancelled), cancelled or failed (when every zone failed).

The ending half of `Announcer` (announcer.py), which it is mixed into: `self` is the announcer, and these
run on its thread only.
"""

from __future__ import annotations

import logging

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.play import Play
from qwen3tts.appliance.audio.track import Track

log = logging.getLogger(__name__)


class EndingsMixin:
    """Playback progress -> events; the end of a play -> the queue and the last event."""

    def _follow_playback(self, play: Play) -> None:
        track = play.track
        zones = track.zones()
        if play.t_started is None and all(p.t_started is not None for p in zones.values()):
            play.t_started = track.t_started
            started = tuple(zone for zone, heard in zones.items() if heard.error is None)
            self._emit(play.ann, "started", "", play.reading, play, zones=started)
        if track.t_first_audio is None:
            track.set_start_threshold(self.lookahead.start_threshold(play))
        elif play.t_first_audio is None:
            play.t_first_audio = track.t_first_audio
            self._emit(play.ann, "first_audio", play=play)
        self._zone_failures(play, zones)
        if track.ended:
            try:
                self._report_end(play, track)
            finally:
                self._stopped_playing(play)  # only now: drain() waits for it, so the last event is out first
            self._on_change()

    def _zone_failures(self, play: Play, zones: dict) -> None:
        """An `error` for each zone whose output failed while others play on (said once per zone)."""
        failed = {zone: heard.error for zone, heard in zones.items() if heard.error is not None}
        if len(failed) == len(zones):
            return  # every zone failed: the play failed as a whole, its end says so
        for zone, error in failed.items():
            if zone not in play.zone_errors:
                play.zone_errors[zone] = error
                self._emit(play.ann, "error", f"zone {zone}: {error}", play=play, zone=zone)

    def _stopped_playing(self, play: Play) -> None:
        if play in self.playing:
            self.playing.remove(play)

    def _report_end(self, play: Play, track: Track) -> None:
        if play.cut is Cut.SHUTDOWN:
            log.info("%s: cut by the shutdown; it stays spooled", play.id)
            play.drop()
            self._spool_write("keep the cut announcement", self.queue.release, play.ann)
        elif track.error is not None or play.cut is Cut.FAILURE:
            self._fail_now(play.ann, play.error or track.error or "playback failed")
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
        _, again = self._spool_write("record the end", self.queue.done, play.ann, self._clock())
        if self.lookahead.replay is not None:
            self.lookahead.replay.keep(play, plays_again=again is not None)  # played out, not cut
        play.drop()
        self._emit(play.ann, "finished", "repeats later" if again else "", play.runaway, play, zones=played)

    def _interrupted(self, play: Play, from_piece: int, cut: Cut) -> None:
        remaining = len(play.pieces) - from_piece
        play.drop()
        if self.settings.announcements.interrupted != "resume" or remaining <= 0:
            self._cancelled(play, cut.value)
            return
        cursor = play.first + from_piece
        self._spool_write("keep the interrupted announcement", self.queue.requeue, play.ann, cursor)
        self._emit(play.ann, "queued", f"{cut.value}; resumes from sentence {cursor + 1}", zones=play.zones)

    def _cancelled(self, play: Play, why: str) -> None:
        play.drop()
        self._gone(play.ann)
        self._spool_write("remove a cancelled announcement", self.queue.discard, play.ann)
        self._emit(play.ann, "cancelled", why, play=play, zones=play.zones)

    def _synthesis_failed(self, ann: Announcement, why: str) -> None:
        """The engine refused or failed a piece: a playing one is cut first (its end reports it)."""
        log.warning("%s: synthesis failed: %s", ann.id, why)
        playing = next((play for play in self.playing if play.id == ann.id), None)
        if playing is not None:
            playing.error = why
            self._cut(playing, Cut.FAILURE)
        else:
            self._fail_now(ann, why)

    def _fail_now(self, ann: Announcement, why: str) -> None:
        """`ann` ends in error at once, wherever it is (a bug while handling it, a refused piece)."""
        play = self.play_of(ann.id)
        if play in self.playing:
            self._stopped_playing(play)
            if not play.track.ended:  # still playing: a bug stops it unrecorded
                play.track.cut(keep_partial=False)
        if play is not None:
            play.drop()
        self._gone(ann)
        self._spool_write("remove a failed announcement", self.queue.discard, ann)
        zones = play.zones if play is not None else ()
        self._emit(ann, "error", why, play=play, zones=zones)
