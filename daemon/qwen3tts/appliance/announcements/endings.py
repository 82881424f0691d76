"""How a play ends, and the events it sends: the announcer follows each playing track (started once every
zone started it, first_audio, an `error` for a zone whose output failed while the others play on) and, once
its last sample was heard in every zone, reports it finished (in the zones that played), interrupted
(waiting again from the piece it was in, or cancelled), cancelled or failed (when every zone failed).

The ending half of `Announcer` (announcer.py), which it is mixed into: `self` is the announcer, and these
run on its thread only.
"""

from __future__ import annotations

import logging

from qwen3tts.appliance.announcements.announcement import Announcement, AnnouncementStatus, Cut
from qwen3tts.appliance.audio.track import Track

log = logging.getLogger(__name__)


class EndingsMixin:
    """Playback progress -> events; the end of a play -> the queue and the last event."""

    def _follow_playback(self, ann: Announcement) -> None:
        track = ann.track
        zones = track.zones()
        if ann.t_started is None and all(p.t_started is not None for p in zones.values()):
            ann.t_started = track.t_started
            started = tuple(zone for zone, play in zones.items() if play.error is None)
            self._emit(ann, "started", "", ann.reading, zones=started)
        if track.t_first_audio is None:
            track.set_start_threshold(self.lookahead.start_threshold(ann))
        elif ann.t_first_audio is None:
            ann.t_first_audio = track.t_first_audio
            self._emit(ann, "first_audio")
        self._zone_failures(ann, zones)
        if track.ended:
            try:
                self._report_end(ann, track)
            finally:
                self._stopped_playing(ann)  # only now: drain() waits for it, so the last event is out first
            self._on_change()

    def _zone_failures(self, ann: Announcement, zones: dict) -> None:
        """An `error` for each zone whose output failed while others play on (said once per zone)."""
        failed = {zone: play.error for zone, play in zones.items() if play.error is not None}
        if len(failed) == len(zones):
            return  # every zone failed: the play failed as a whole, its end says so
        for zone, error in failed.items():
            if zone not in ann.zone_errors:
                ann.zone_errors[zone] = error
                self._emit(ann, "error", f"zone {zone}: {error}", zone=zone)

    def _stopped_playing(self, ann: Announcement) -> None:
        if ann in self.playing:
            self.playing.remove(ann)

    def _report_end(self, ann: Announcement, track: Track) -> None:
        if ann.cut is Cut.SHUTDOWN:
            log.info("%s: cut by the shutdown; it stays spooled", ann.id)
            ann.forget_synthesis()
            self._spool_write("keep the cut announcement", self.queue.release, ann)
        elif track.error is not None or ann.cut is Cut.FAILURE:
            self._fail_now(ann, ann.error or track.error or "playback failed")
        elif ann.cut is Cut.BARGE_IN:
            self._interrupted(ann, self.lookahead.piece_playing(ann), Cut.BARGE_IN)
        elif ann.cut is Cut.TAKEOVER and track.played_out:
            self._interrupted(ann, ann.cut_at or 0, Cut.TAKEOVER)
        elif ann.cut is not None:
            self._cancelled(ann, ann.cut.value)
        else:
            self._finished(ann, track)

    def _finished(self, ann: Announcement, track: Track) -> None:
        ann.t_finished = track.t_ended
        played = tuple(zone for zone, play in track.zones().items() if play.played_out)
        again = self._spool_write("record the end", self.queue.done, ann, self._clock())
        if self.lookahead.replay is not None:
            self.lookahead.replay.keep(ann, plays_again=bool(again))  # played out, not cut: worth keeping
        ann.forget_synthesis()
        ann.status = AnnouncementStatus.QUEUED if again else AnnouncementStatus.FINISHED
        self._emit(ann, "finished", "repeats later" if again else "", ann.runaway, zones=played)

    def _interrupted(self, ann: Announcement, from_piece: int, cut: Cut) -> None:
        remaining = len(ann.pieces) - from_piece
        zones = ann.play_zones
        ann.forget_synthesis()
        if self.settings.announcements.interrupted != "resume" or remaining <= 0:
            self._cancelled(ann, cut.value, zones)
            return
        ann.cursor += from_piece
        ann.t_started = ann.t_first_audio = None
        ann.status = AnnouncementStatus.QUEUED
        self._spool_write("keep the interrupted announcement", self.queue.requeue, ann)
        self._emit(ann, "queued", f"{cut.value}; resumes from sentence {ann.cursor + 1}", zones=zones)

    def _cancelled(self, ann: Announcement, why: str, zones: tuple[str, ...] = ()) -> None:
        zones = zones or ann.play_zones
        ann.forget_synthesis()
        ann.status = AnnouncementStatus.CANCELLED
        self._spool_write("remove a cancelled announcement", self.queue.discard, ann)
        self._emit(ann, "cancelled", why, zones=zones)

    def _synthesis_failed(self, ann: Announcement, why: str) -> None:
        """The engine refused or failed a piece: the current one is cut first (its end reports it)."""
        log.warning("%s: synthesis failed: %s", ann.id, why)
        if ann in self.playing:
            ann.error = why
            self._cut(ann, Cut.FAILURE)
        else:
            self._fail_now(ann, why)

    def _fail_now(self, ann: Announcement, why: str) -> None:
        """`ann` ends in error at once, wherever it is (a bug while handling it, a refused piece)."""
        zones = ann.play_zones
        if ann in self.playing:
            self._stopped_playing(ann)
            if ann.track is not None and not ann.track.ended:  # still playing: a bug stops it unrecorded
                ann.track.cut(keep_partial=False)
        ann.forget_synthesis()
        ann.status = AnnouncementStatus.FAILED
        self._spool_write("remove a failed announcement", self.queue.discard, ann)
        self._emit(ann, "error", why, zones=zones)
