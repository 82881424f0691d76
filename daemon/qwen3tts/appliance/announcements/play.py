"""A play: what happens while one announcement is spoken, from its first submitted piece to its end.

The announcer makes a `Play` when it prepares an announcement (the text front end's pieces from the
announcement's `cursor` on, a fresh track) and drops it when the play ends, is cut for good or is cancelled:
dropping it cancels its engine requests and abandons its track. A resumed announcement gets a new Play
from the sentence it was in; a repeat gets a new Play too. Nothing of a play is spooled.

Each piece is a `PiecePlay`: its text (with its SSML marks), the engine handle while its PCM is not all in
the track, the track sample where it ends once complete, and the time-scale modification of its speech
while it arrives. The PCM of the pieces goes into the track in order, so pieces 0..done-1 are complete,
piece `done` may be arriving and the ones after it wait in their handles or were not submitted yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qwen3tts.appliance.announcements.announcement import Announcement, Cut

if TYPE_CHECKING:
    import numpy as np

    from qwen3tts.appliance.audio.track import Track
    from qwen3tts.engine.sequence import Handle
    from qwen3tts.tempo import TimeStretch
    from qwen3tts.text import Piece


@dataclass(eq=False)
class PiecePlay:
    """One piece of text as it is synthesised and put into the play's track."""

    piece: Piece
    handle: Handle | None = None
    """Its engine request while its PCM is not all in the track (None: not submitted, or complete)."""
    end: int | None = None
    """Track sample where it ends, once all of it is in the track."""
    stretch: TimeStretch | None = None
    """The time-scale modification of its speech while it arrives, when its SSML rate is not 1."""
    submitted_at: float | None = None
    """Monotonic time it went to the engine (the wait for its first PCM is measured from there)."""
    arriving_since: float | None = None
    """Monotonic time its first PCM came (its speed is measured from there)."""
    last_pcm_at: float | None = None
    """Monotonic time its latest PCM came (the waits between its codec chunks are measured from there)."""

    def drop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        if self.stretch is not None:
            self.stretch.close()
            self.stretch = None


@dataclass(eq=False)
class Play:
    """One play of `ann`: its pieces, its track, where it plays and how it ends (compared by identity)."""

    ann: Announcement
    """The announcement as the queue holds it now (a pop spools a copy with one more attempt)."""
    pieces: list[PiecePlay]
    track: Track
    first: int = 0
    """The sentence of the whole text its first piece is (the announcement's cursor, within the text)."""
    reading: tuple[str, ...] = ()
    """What the text front end could not read well; said in `started`."""
    zones: tuple[str, ...] = ()
    """The zones it is heard in (its announcement's, or every zone), set when it starts."""
    cut: Cut | None = None
    cut_at: int | None = None
    """Piece index where a takeover ends it (no piece from there is played)."""
    error: str | None = None
    runaway: tuple[str, ...] = ()
    """Sentences the frame cap stopped (the model ran away); said in `finished`."""
    zone_errors: dict[str, str] = field(default_factory=dict)
    """Zones whose output failed, with the error (each reported once)."""
    from_cache: bool = False
    """Its audio came from the phrase cache or the first rendition (no synthesis)."""
    rendition: list[np.ndarray] | None = None
    """Its PCM as synthesised, collected for the phrase cache (phrase_replay.py)."""
    rendition_key: str | None = None
    t_started: float | None = None
    t_first_audio: float | None = None
    t_finished: float | None = None

    @property
    def id(self) -> str:
        return self.ann.id

    @property
    def done(self) -> int:
        """How many pieces are complete in the track (they complete in order)."""
        return next((i for i, piece in enumerate(self.pieces) if piece.end is None), len(self.pieces))

    @property
    def ends(self) -> list[int]:
        """Track sample where each complete piece ends."""
        return [piece.end for piece in self.pieces[: self.done]]

    @property
    def playing_end(self) -> int:
        """Pieces it may reach: all of them, or up to where a takeover ends it."""
        return len(self.pieces) if self.cut_at is None else self.cut_at

    @property
    def complete(self) -> bool:
        """Every piece it reaches is in the track."""
        return self.done >= self.playing_end

    def handles(self) -> list[Handle]:
        """The engine requests still held (pieces submitted and not complete)."""
        return [piece.handle for piece in self.pieces if piece.handle is not None]

    def cancel_from(self, index: int) -> None:
        """Cancel the engine requests of pieces `index` on (a cut or a takeover)."""
        for piece in self.pieces[index:]:
            piece.drop()

    def drop(self) -> None:
        """Cancel every engine request and abandon the track: nothing of this play is heard any more."""
        self.cancel_from(0)
        self.track.abandon()


class Plays:
    """The announcer's plays: what plays now, and what is prepared for waiting announcements.

    Changed on the announcer's thread only; `playing` is read by other threads as a copy (the status).
    """

    def __init__(self) -> None:
        self.playing: list[Play] = []
        """What plays now, in the order it started; their zones never overlap."""
        self.ahead: dict[str, Play] = {}
        """Plays prepared for waiting announcements (their first pieces synthesised ahead), by id."""

    @property
    def current(self) -> Play | None:
        """The first play now (on a box with one zone: the one that plays)."""
        playing = list(self.playing)
        return playing[0] if playing else None

    def playing_one(self, ann_id: str) -> Play | None:
        return next((play for play in self.playing if play.id == ann_id), None)

    def of(self, ann_id: str) -> Play | None:
        """The play of an announcement: playing, or prepared ahead while it waits; None without one."""
        return self.playing_one(ann_id) or self.ahead.get(ann_id)

    def synthesising(self) -> list[Play]:
        """Plays whose PCM may be arriving: every playing one, and those ahead with engine requests."""
        return [*self.playing, *(play for play in list(self.ahead.values()) if play.handles())]

    def drop_ahead(self, ann: Announcement) -> None:
        """Drop the play prepared for a waiting announcement (its synthesis is cancelled)."""
        play = self.ahead.pop(ann.id, None)
        if play is not None:
            play.drop()
