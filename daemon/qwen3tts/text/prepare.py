"""prepare(): an announcement's text (plain or SSML) -> what the model gets, piece by piece.

Order: resolve the language tag; detect the language for `auto` (the model keeps `auto`); split the
text into pieces; per piece apply the site lexicon, then normalise. Each Piece keeps the slice it was
read from beside what the model will say, so events and `qwen3tts text` can show both.

SSML (ssml/) takes the same path: the document becomes blocks of text (a new block wherever a break,
paragraph, sentence, language, voice, rate or chime starts or ends), each block is split, read and
normalised exactly like plain text, and its pieces carry the block's marks (silence, language, voice,
rate, emphasis, chime) for the audio side. What `say-as` and `sub` produce is said as rendered: the
lexicon and the normaliser leave it alone.

What the reader could not do well is said in `Prepared.warnings` (for the events' `warnings`): digits
no rule read, a spoken form cut because it grew too long, a lexicon pattern skipped, SSML ignored.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from qwen3tts.errors import RequestError
from qwen3tts.text.detect import detect_language
from qwen3tts.text.languages import AUTO, MODEL_LANGUAGES, resolve_language
from qwen3tts.text.lexicon import Lexicon
from qwen3tts.text.normalize import normalize as normalize_text
from qwen3tts.text.normalize import unread
from qwen3tts.text.normalize.scanner import tidy
from qwen3tts.text.splitter import MAX_WEIGHT, split_spans, split_spoken, weight
from qwen3tts.text.ssml import Block, is_ssml, parse_ssml

MAX_WARNINGS = 20  # one hostile text must not make a thousand-entry event
CUT_FACTOR = 2  # a spoken form heavier than this many times max_weight is cut again


@dataclass(frozen=True)
class Piece:
    text: str
    """The slice of the announcement this piece was read from (Prepared.text[start:end])."""
    normalized: str
    """What the model gets for this piece: lexicon applied, then normalised (unless turned off)."""
    start: int
    """Offset of the piece in Prepared.text."""
    end: int
    """Offset just past the piece."""
    language: str | None = None
    """Model language for this piece when SSML `<lang>` changed it; None: the announcement's."""
    voice: str | None = None
    """Voice name from SSML `<voice name>`; None: the announcement's voice."""
    rate: float = 1.0
    """Speaking rate from SSML `<prosody rate>` (1.0 as synthesised; 2.0 twice as fast)."""
    emphasis: str | None = None
    """SSML `<emphasis level>` found in this piece (strong, moderate, reduced), if any."""
    silence_before_ms: int = 0
    """Exact silence to play before this piece (SSML `<break>`), in milliseconds."""
    silence_after_ms: int = 0
    """Exact silence to play after this piece (SSML `<break>`), in milliseconds."""
    chime: str | None = None
    """A configured chime to play instead of speech (SSML `<audio src>`); `normalized` is then ""."""


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
    warnings: tuple[str, ...] = ()
    """What could not be read well, for the events' `warnings` (at most MAX_WARNINGS)."""
    ssml: bool = False
    """Whether the text was read as SSML."""
    text: str = ""
    """The text the pieces are slices of: the input, or an SSML document's text after markup."""


def prepare(
    text: str,
    language: str | None = None,
    normalize: bool = True,
    lexicon: Lexicon | None = None,
    supported: Iterable[str] = MODEL_LANGUAGES,
    max_weight: int = MAX_WEIGHT,
    ssml: bool | None = None,
    chimes: Collection[str] | None = None,
) -> Prepared:
    """Split, apply the lexicon to and normalise `text`; RequestError for a bad text or language tag.

    `ssml`: True reads `text` as SSML, False as plain text, None (default) as SSML when it starts
    with `<speak`. `chimes`: the names SSML `<audio src>` may play (None: any well-formed name).
    An SSML document that is invalid or too large raises SSMLError (a RequestError) with the position.
    """
    if not isinstance(text, str):
        raise RequestError(f"text must be a string, got {type(text).__name__}")
    _check_unicode(text)
    names = tuple(name.lower() for name in supported)
    model_language = resolve_language(language, names)
    warnings: list[str] = []
    as_ssml = is_ssml(text) if ssml is None else ssml
    if as_ssml:
        blocks, spoken_text, detected = _ssml_blocks(text, model_language, names, chimes, warnings)
    else:
        blocks, spoken_text = [Block(0, len(text))], text
        detected = detect_language(text, names) if model_language == AUTO else model_language
    pieces: list[Piece] = []
    for block in blocks:
        pieces.extend(_read_block(spoken_text, block, detected, normalize, lexicon, max_weight, warnings))
    return Prepared(model_language, detected, pieces, normalize, _bounded(warnings), as_ssml, spoken_text)


def _ssml_blocks(
    text: str,
    model_language: str,
    names: tuple[str, ...],
    chimes: Collection[str] | None,
    warnings: list[str],
) -> tuple[list[Block], str, str]:
    """(blocks, their text, the language normalised as) of an SSML document.

    say-as reads in the announcement's language, which `auto` detects from the document's text: a
    bounded document parses in well under a millisecond, so it is parsed again in the language found.
    """
    first_guess = "english" if model_language == AUTO else model_language
    document = parse_ssml(text, names, chimes, first_guess)
    detected = detect_language(document.text, names) if model_language == AUTO else model_language
    if detected != first_guess:
        document = parse_ssml(text, names, chimes, detected)
    warnings.extend(document.warnings)
    return document.blocks, document.text, detected


def _read_block(
    text: str,
    block: Block,
    detected: str,
    normalize: bool,
    lexicon: Lexicon | None,
    max_weight: int,
    warnings: list[str],
) -> list[Piece]:
    """The pieces of one block: split like plain text, each read, then the block's marks put on."""
    language = block.language or detected
    if block.chime is not None:
        spans = []
    else:
        spans = [
            (block.start + a, block.start + b)
            for a, b in split_spans(text[block.start : block.end], language, max_weight=max_weight)
        ]
    pieces: list[Piece] = []
    for start, end in spans:
        original = text[start:end]
        said = _read(text, start, end, block.verbatim, language, normalize, lexicon, warnings)
        # Reading a sentence may double it (numbers become words); past that it is cut again, so no
        # spoken piece holds the speaker for minutes (a 2000-digit number read digit by digit).
        parts = split_spoken(said, max_weight) if weight(said) > CUT_FACTOR * max_weight else [said]
        if len(parts) > 1:
            warnings.append(
                f"{_quote(original)} reads as {len(said)} characters: cut into {len(parts)} pieces"
            )
        for number, part in enumerate(parts):
            first = number == 0
            pieces.append(Piece(original if first else "", part, start if first else end, end))
    if not pieces and block.chime is not None:
        pieces.append(Piece("", "", block.start, block.start, chime=block.chime))
    if not pieces and (block.silence_before_ms or block.silence_after_ms):
        pieces.append(Piece("", "", block.start, block.start))  # a break with nothing to say around it
    return _marked(pieces, block)


def _read(
    text: str,
    start: int,
    end: int,
    verbatim: tuple[tuple[int, int], ...],
    language: str,
    normalize: bool,
    lexicon: Lexicon | None,
    warnings: list[str],
) -> str:
    """What the model says for text[start:end]: verbatim spans as they are, the rest read."""
    said: list[str] = []
    position = start
    for v_start, v_end in verbatim:
        if v_end <= start or v_start >= end:
            continue
        said.append(_read_plain(text[position : max(v_start, start)], language, normalize, lexicon, warnings))
        said.append(text[max(v_start, start) : min(v_end, end)])
        position = min(v_end, end)
    said.append(_read_plain(text[position:end], language, normalize, lexicon, warnings))
    return tidy("".join(said)) or text[start:end]


def _read_plain(
    text: str, language: str, normalize: bool, lexicon: Lexicon | None, warnings: list[str]
) -> str:
    """`text` read, keeping the whitespace around it (so "Gate " before a say-as stays apart from it)."""
    core = text.strip()
    if not core:
        return text
    said = lexicon.apply(core, warnings) if lexicon is not None else core
    if normalize:
        said = normalize_text(said, language)
        warnings.extend(f"left as written (no reading for it): {_quote(token)}" for token in unread(said))
    return text[: len(text) - len(text.lstrip())] + said + text[len(text.rstrip()) :]


def _marked(pieces: list[Piece], block: Block) -> list[Piece]:
    if not pieces:
        return pieces
    marks = {
        "language": block.language,
        "voice": block.voice,
        "rate": block.rate,
        "chime": block.chime,
    }
    marked = [replace(piece, **marks, emphasis=block.emphasis_in(piece.start, piece.end)) for piece in pieces]
    marked[0] = replace(marked[0], silence_before_ms=block.silence_before_ms)
    marked[-1] = replace(marked[-1], silence_after_ms=block.silence_after_ms)
    return marked


def _check_unicode(text: str) -> None:
    """A lone surrogate cannot be encoded for any library below: refuse it here, with its offset."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RequestError(
            f"text holds a lone surrogate (U+{ord(text[exc.start]):04X}) at offset {exc.start}: "
            "not valid Unicode text"
        ) from None


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _bounded(warnings: list[str]) -> tuple[str, ...]:
    unique = list(dict.fromkeys(warnings))
    if len(unique) <= MAX_WARNINGS:
        return tuple(unique)
    return (*unique[: MAX_WARNINGS - 1], f"and {len(unique) - MAX_WARNINGS + 1} more warnings")
