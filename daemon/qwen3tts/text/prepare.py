"""prepare(): an announcement's text -> what the model gets, piece by piece.

Order: resolve the language tag; detect the language for `auto` (the model keeps `auto`); split the
original text into pieces; per piece apply the site lexicon, then normalise. Each Piece keeps the
original slice beside what the model will say, so events and `qwen3tts text` can show both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from qwen3tts.errors import RequestError
from qwen3tts.text.detect import detect_language
from qwen3tts.text.languages import AUTO, MODEL_LANGUAGES, resolve_language
from qwen3tts.text.lexicon import Lexicon
from qwen3tts.text.normalize import normalize as normalize_text
from qwen3tts.text.splitter import MAX_WEIGHT, split_spans


@dataclass(frozen=True)
class Piece:
    text: str
    """The original slice of the announcement (text[start:end])."""
    normalized: str
    """What the model gets for this piece: lexicon applied, then normalised (unless turned off)."""
    start: int
    """Offset of the piece in the announcement text."""
    end: int
    """Offset just past the piece."""


@dataclass(frozen=True)
class Prepared:
    language: str
    """The model language name to send: "auto" unless the message named a language."""
    detected: str
    """The language the text was normalised as (detected from the text when `language` is auto)."""
    pieces: list[Piece]
    """The pieces in order; empty for a text with nothing to say."""
    normalized: bool = True
    """Whether normalisation ran (the lexicon always does)."""


def prepare(
    text: str,
    language: str | None = None,
    normalize: bool = True,
    lexicon: Lexicon | None = None,
    supported: Iterable[str] = MODEL_LANGUAGES,
    max_weight: int = MAX_WEIGHT,
) -> Prepared:
    """Split, apply the lexicon to and normalise `text`; RequestError for a bad text or language tag."""
    if not isinstance(text, str):
        raise RequestError(f"text must be a string, got {type(text).__name__}")
    names = tuple(name.lower() for name in supported)
    model_language = resolve_language(language, names)
    detected = detect_language(text, names) if model_language == AUTO else model_language
    pieces = []
    for start, end in split_spans(text, detected, max_weight=max_weight):
        original = text[start:end]
        said = lexicon.apply(original) if lexicon is not None else original
        if normalize:
            said = normalize_text(said, detected)
        pieces.append(Piece(original, said.strip() or original, start, end))
    return Prepared(model_language, detected, pieces, normalize)
