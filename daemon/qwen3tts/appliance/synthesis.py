"""Text + voice -> engine requests, one per sentence: shared by the announcer and the network servers.

Both front doors (MQTT announcements, Wyoming/HTTP requests) turn text into engine work the same way,
so a change to sentence splitting or to the per-sentence frame budget changes both at once.
"""

from __future__ import annotations

from qwen3tts.engine.sequence import Priority, Request
from qwen3tts.text import Lexicon, prepare
from qwen3tts.text.languages import MODEL_LANGUAGES

# Runaway guard: a sentence gets at most this many 80 ms frames (about 3x a normal speaking rate), so a
# model that misses its end-of-speech token cannot hold the speaker for minutes.
FRAMES_BASE, FRAMES_PER_CHAR = 25, 2.5


def split_text(
    text: str,
    language: str = "auto",
    *,
    normalize: bool = True,
    lexicon: Lexicon | None = None,
    supported: tuple[str, ...] = MODEL_LANGUAGES,
) -> list[str]:
    """What the model gets for `text`, one engine request per piece (the one call of the text front end).

    Pieces come from `qwen3tts.text.prepare`: split without changing the text, the site lexicon
    applied, then numbers, times, units and codes read out for `language` (detected for `auto`).
    """
    prepared = prepare(text, language=language, normalize=normalize, lexicon=lexicon, supported=supported)
    return [piece.normalized for piece in prepared.pieces if piece.normalized.strip()] or [text]


def frame_budget(sentence: str, max_frames: int) -> int:
    """Frames one sentence may take: generous for speech, bounded for a runaway generation."""
    weight = sum(2 if ord(ch) > 0x2E80 else 1 for ch in sentence)  # a CJK character ~ two letters
    return min(max_frames, FRAMES_BASE + int(FRAMES_PER_CHAR * weight))


def sentence_request(
    request_id: str,
    sentence: str,
    *,
    language: str,
    voice: str | None,
    instruct: str | None,
    priority: Priority,
    max_frames: int,
) -> Request:
    """The engine request for one sentence, its frame budget derived from the sentence."""
    return Request(
        id=request_id,
        text=sentence,
        language=language,
        speaker=voice,
        instruct=instruct,
        priority=priority,
        max_frames=frame_budget(sentence, max_frames),
    )
