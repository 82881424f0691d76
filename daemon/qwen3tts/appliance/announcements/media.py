"""Pre-rendered audio as an announcement: media a renderer decoded, played from its samples.

An announcement with `media` has no text to read and nothing to synthesise: its play is the media cut
into segments of `SEGMENT_S`, one `PiecePlay` each, moved into the track from the samples a few seconds
ahead of playback (the look-ahead's `move_pcm` calls `fill`), so the track never holds a second copy of
a long file and the announcer's turn never measures the loudness of minutes at once. The segments are
the media's "sentences": an announcement that takes over does so at the next segment boundary, an
emergency barges in within one block, and the interrupted media waits again from the segment it was in
(its `cursor` counts segments), as a spoken announcement resumes from its sentence.

Media at `Priority.BACKGROUND` is a stream: every announcement interrupts it (choosing.py). Media is
never spooled (queue.py): its samples live in memory only and are lost with the process, as a
controller expects of a renderer; a shutdown cancels it with an event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qwen3tts.appliance.announcements.announcement import Cut
from qwen3tts.appliance.announcements.media_audio import SEGMENT, SEGMENT_S
from qwen3tts.appliance.announcements.play import PiecePlay, Play
from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.priority import Priority
from qwen3tts.text import Piece

if TYPE_CHECKING:
    from qwen3tts.appliance.announcements.announcement import Announcement

NOT_KEPT = f"{Cut.SHUTDOWN.value}; media is not kept across a restart"
"""Why media ends at a shutdown (text stays spooled and plays after the restart)."""
AHEAD_S = 4.0
"""Seconds of media kept in the track ahead of the slowest zone."""


def media_play(ann: Announcement) -> Play:
    """A new play of `ann`'s media from the segment its `cursor` names, its first seconds in the track."""
    media = ann.media
    first = min(ann.cursor, media.segments - 1)
    segment = Piece(ann.text, "", 0, len(ann.text))  # no words: nothing of it goes to the engine
    pieces = [PiecePlay(segment) for _ in range(first, media.segments)]
    play = Play(ann, pieces, Track(ann.id), first)
    fill(play)
    return play


def fill(play: Play) -> None:
    """Move segments into the track until `AHEAD_S` are buffered; close it after the last it may reach
    (all of them, or up to where a takeover ends it)."""
    track, pcm = play.track, play.ann.media.pcm
    if track.closed:
        return
    while play.done < play.playing_end and track.available < AHEAD_S * MODEL_RATE:
        index = play.first + play.done
        track.put(pcm[index * SEGMENT : (index + 1) * SEGMENT])
        play.pieces[play.done].end = track.received
    if play.done >= play.playing_end:
        track.close()


def interrupted_reason(ann: Announcement, cut: Cut, cursor: int) -> str:
    """The `queued` event's reason when `ann` was interrupted and resumes from `cursor`."""
    why = cut.value
    if cut is Cut.TAKEOVER and ann.priority is Priority.BACKGROUND:
        why = "an announcement took over"  # a stream: any announcement takes over, not only a priority one
    if ann.media is not None:
        return f"{why}; resumes at {cursor * SEGMENT_S:.0f} s"
    return f"{why}; resumes from sentence {cursor + 1}"
