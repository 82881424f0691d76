"""How a play ends, and the events it sends: the announcer follows the playing track (started,
first_audio) and, once its last sample was heard, reports it finished, interrupted (waiting again from the
piece it was in, or cancelled), cancelled or failed.

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
        if track.t_started is not None and ann.t_started is None:
            ann.t_started = track.t_started
            self._emit(ann, "started")
        if track.t_first_audio is None:
            track.set_start_threshold(self.lookahead.start_threshold(ann))
        elif ann.t_first_audio is None:
            ann.t_first_audio = track.t_first_audio
            self._emit(ann, "first_audio")
        if track.ended:
            try:
                self._report_end(ann, track)
            finally:
                self.current = None  # only now: drain() waits for it, so the last event is out first
            self._on_change()

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
        again = self._spool_write("record the end", self.queue.done, ann, self._clock())
        if self.lookahead.replay is not None:
            self.lookahead.replay.keep(ann, plays_again=bool(again))  # played out, not cut: worth keeping
        ann.forget_synthesis()
        ann.status = AnnouncementStatus.QUEUED if again else AnnouncementStatus.FINISHED
        self._emit(ann, "finished", "repeats later" if again else "")

    def _interrupted(self, ann: Announcement, from_piece: int, cut: Cut) -> None:
        remaining = len(ann.pieces) - from_piece
        ann.forget_synthesis()
        if self.settings.announcements.interrupted != "resume" or remaining <= 0:
            self._cancelled(ann, cut.value)
            return
        ann.cursor += from_piece
        ann.t_started = ann.t_first_audio = None
        ann.status = AnnouncementStatus.QUEUED
        self._spool_write("keep the interrupted announcement", self.queue.requeue, ann)
        self._emit(ann, "queued", f"{cut.value}; resumes from sentence {ann.cursor + 1}")

    def _cancelled(self, ann: Announcement, why: str) -> None:
        ann.forget_synthesis()
        ann.status = AnnouncementStatus.CANCELLED
        self._spool_write("remove a cancelled announcement", self.queue.discard, ann)
        self._emit(ann, "cancelled", why)

    def _synthesis_failed(self, ann: Announcement, why: str) -> None:
        """The engine refused or failed a piece: the current one is cut first (its end reports it)."""
        log.warning("%s: synthesis failed: %s", ann.id, why)
        if ann is self.current:
            ann.error = why
            self._cut(ann, Cut.FAILURE)
        else:
            self._fail_now(ann, why)

    def _fail_now(self, ann: Announcement, why: str) -> None:
        """`ann` ends in error at once, wherever it is (a bug while handling it, a refused piece)."""
        if ann is self.current:
            self.current = None
            if ann.track is not None and not ann.track.ended:  # still playing: a bug stops it unrecorded
                ann.track.cut(keep_partial=False)
        ann.forget_synthesis()
        ann.status = AnnouncementStatus.FAILED
        self._spool_write("remove a failed announcement", self.queue.discard, ann)
        self._emit(ann, "error", why)
