"""What a piece's SSML marks sound like: exact silence around it, a chime instead of speech, its rate.

The text front end (text/prepare.py) gives each piece its marks; the look-ahead puts this audio into the
announcement's track around (or instead of) the piece's synthesised speech, so a `<break time="750ms"/>`
is 750 ms of zero samples in the track and an `<audio src="emergency"/>` is that configured chime at that
point. Only the chimes configured for the priorities can be named (never a path or URL: the parser
refuses those). A rate other than 1 runs the piece's speech through the time-scale modification the HTTP
API's `speed` uses (tempo.py).
"""

from __future__ import annotations

import numpy as np

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.synthesis import speaks
from qwen3tts.tempo import TimeStretch
from qwen3tts.text import Piece
from qwen3tts.text.splitter import weight

_EMPTY = np.zeros(0, np.float32)


def silence(milliseconds: int) -> np.ndarray:
    """Exact silence: zero samples at the model rate."""
    return np.zeros(milliseconds * MODEL_RATE // 1000, np.float32)


def piece_key(piece: Piece) -> str:
    """What identifies a piece's audio in the phrase cache: its text, and its marks when it has any (a
    plain piece keys as its text alone, so plain announcements keep their cached renditions)."""
    marks = (piece.language, piece.voice, piece.rate, piece.chime)
    marks += (piece.silence_before_ms, piece.silence_after_ms)
    if marks == (None, None, 1.0, None, 0, 0):
        return piece.normalized
    return f"{piece.normalized}\x1f{marks!r}"


class PieceAudio:
    """The audio of pieces' marks, from the configured chimes."""

    def __init__(self, chimes: ChimeSet | None = None):
        self.chimes = chimes if chimes is not None else ChimeSet.silent()

    def chime_names(self) -> tuple[str, ...]:
        """The names an SSML `<audio src>` may play: the priorities whose chime is not `none`."""
        return tuple(name for name, sound in self.chimes.by_priority.items() if sound is not None)

    def before(self, piece: Piece) -> np.ndarray:
        """What plays before the piece's speech: its silence, then its chime (a chime piece has no speech)."""
        chime = self.chimes.by_priority.get(piece.chime) if piece.chime else None
        if chime is None:
            return silence(piece.silence_before_ms) if piece.silence_before_ms else _EMPTY
        return np.concatenate([silence(piece.silence_before_ms), chime.astype(np.float32)])

    @staticmethod
    def after(piece: Piece) -> np.ndarray:
        return silence(piece.silence_after_ms) if piece.silence_after_ms else _EMPTY

    def extra_s(self, piece: Piece) -> float:
        """Seconds of the piece that are not synthesised: its silence and chime."""
        chime = self.chimes.by_priority.get(piece.chime) if piece.chime else None
        silent_ms = piece.silence_before_ms + piece.silence_after_ms
        return silent_ms / 1000 + (len(chime) / MODEL_RATE if chime is not None else 0.0)

    def estimate_s(self, piece: Piece, chars_per_second: float) -> float:
        """Seconds of audio the piece gives, before it is synthesised (speech at its rate)."""
        speech = weight(piece.normalized) / chars_per_second / piece.rate if speaks(piece) else 0.0
        return speech + self.extra_s(piece)

    @staticmethod
    def stretch(piece: Piece) -> TimeStretch | None:
        """The time-scale modification for the piece's speech; None at its natural rate."""
        return TimeStretch(piece.rate, MODEL_RATE) if piece.rate != 1.0 else None
