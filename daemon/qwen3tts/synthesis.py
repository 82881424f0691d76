"""Text + voice -> engine requests, one per piece of text: what every door shares.

The announcer (MQTT announcements) and the network servers (Wyoming, HTTP) turn text into engine work
the same way, so a change to splitting or to the per-piece frame budget changes both at once. The rules
a request's text and style instruction must pass are here too (`checked_speech`, `checked_instruct`),
called by every door with the same reasons. Voice names are resolved by the one catalog
(voices/catalog.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qwen3tts.engine.sequence import Request
from qwen3tts.errors import RequestError
from qwen3tts.text import MODEL_LANGUAGES, Lexicon, Piece, Prepared, prepare
from qwen3tts.text.checks import check_clean, checked_text
from qwen3tts.text.splitter import weight
from qwen3tts.text.ssml import is_ssml, parse_ssml

if TYPE_CHECKING:
    from qwen3tts.voices.catalog import VoiceCatalog

# Runaway guard: a sentence gets at most this many 80 ms frames (about 3x a normal speaking rate), so a
# model that misses its end-of-speech token cannot hold the speaker for minutes.
FRAMES_BASE, FRAMES_PER_CHAR = 25, 2.5


@dataclass
class SpeechDefaults:
    """What a request that names no voice, language or instruct gets; `voice/set` and SIGHUP change it."""

    voice: str | None
    language: str
    instruct: str | None

    @classmethod
    def from_settings(cls, voice_settings, speakers) -> SpeechDefaults:
        """The `voice` settings, the voice in the bundle's spelling (a Home Assistant select option)."""
        voice = voice_settings.voice or (next(iter(speakers)) if speakers else None)
        voice = next((s for s in speakers if voice and s.lower() == voice.lower()), voice)
        return cls(voice=voice, language=voice_settings.language, instruct=voice_settings.instruct or None)


@dataclass
class TextOptions:
    """How text becomes model input here: the normalisation default, the site lexicon, the languages.

    One object shared by the announcer and the network servers; SIGHUP replaces `lexicon`.
    """

    normalize: bool = True
    lexicon: Lexicon | None = None
    languages: tuple[str, ...] = MODEL_LANGUAGES
    front_end: Callable[..., Prepared] = prepare
    """Where `prepare` runs: in the caller's thread, or a `GuardedFrontEnd` (text/guard.py) that abandons
    a text past its deadline; the service installs the guarded one."""


def read_text(
    text: str, language: str, options: TextOptions | None = None, normalize: bool | None = None
) -> tuple[list[str], tuple[str, ...]]:
    """What the model gets for `text`, one engine request per piece, and what the reader could not do
    well (`Prepared.warnings`: digits left unread, a piece cut at the length limit), for the
    announcement's `started` event. Pieces come from `qwen3tts.text.prepare` (split without changing
    the text, the site lexicon applied, then numbers, times, units and codes read out for `language`);
    `normalize` (a message's own choice) overrides the configured default."""
    pieces, warnings = read_pieces(text, language, options, normalize)
    return [piece.normalized for piece in pieces if speaks(piece)] or [text], warnings


def read_pieces(
    text: str,
    language: str,
    options: TextOptions | None = None,
    normalize: bool | None = None,
    ssml: bool | None = None,
    chimes: Collection[str] | None = None,
) -> tuple[list[Piece], tuple[str, ...]]:
    """What plays for `text`, piece by piece with its marks (SSML silence, chime, language, voice,
    rate), and the reader's warnings. `ssml` None reads SSML when the text starts with `<speak`;
    `chimes` are the sounds `<audio src>` may name. Pieces with nothing to say, play or wait for are
    left out; a text that leaves nothing is one piece of itself. SSMLError (a RequestError, with the
    line and column) for a document that cannot be read.
    """
    options = options or TextOptions()
    normalize = options.normalize if normalize is None else normalize
    lexicon, languages = options.lexicon, options.languages
    prepared = options.front_end(text, language, normalize, lexicon, languages, ssml=ssml, chimes=chimes)
    kept = [piece for piece in prepared.pieces if speaks(piece) or piece.chime or _silence_ms(piece)]
    return kept or [Piece(text, text, 0, len(text))], tuple(prepared.warnings)


def speaks(piece: Piece) -> bool:
    """Whether the piece is synthesised (it has words); a chime or a bare break is not."""
    return bool(piece.normalized.strip())


def _silence_ms(piece: Piece) -> int:
    return piece.silence_before_ms + piece.silence_after_ms


def checked_speech(
    raw: str,
    ssml: bool | None,
    max_chars: int,
    voices: VoiceCatalog,
    chimes: Collection[str] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """(the text to speak, the SSML warnings) with the checks and reasons every door shares.

    Plain text: `checked_text` (clean, not empty, at most `max_chars`). SSML (`ssml` True, or None and
    it starts with `<speak`): clean, then parsed (SSMLError with the reason, line and column; the
    document may hold up to MAX_DOCUMENT_CHARS with its markup, what it says at most `max_chars`), each
    `<voice name>` resolved through the catalog (RequestError naming the known voices); the warnings
    say which markup was ignored (unknown elements).
    """
    stripped = raw.strip() if isinstance(raw, str) else raw
    if not (is_ssml(stripped) if ssml is None else ssml):
        return checked_text(raw, max_chars), ()
    text = checked_text(raw, max(len(raw), 1))  # clean and not empty; the parser bounds its size
    languages = tuple(name.lower() for name in voices.languages) or MODEL_LANGUAGES
    document = parse_ssml(text, languages, chimes)
    said = len(document.text.strip())
    if said > max_chars:
        raise RequestError(f"SSML text too long ({said} characters said > {max_chars})")
    for name in dict.fromkeys(block.voice for block in document.blocks if block.voice):
        voices.resolve(name)
    return text, tuple(document.warnings)


INSTRUCT_IGNORED = "{} ignored: this bundle cannot follow style instructions"
"""The warning when a bundle without an instruct turn (Base, 0.6B CustomVoice) gets an instruction."""


def checked_instruct(
    raw: str | None, max_chars: int, supported: bool, name: str = "instruct"
) -> tuple[str | None, tuple[str, ...]]:
    """(the style instruction to follow, warnings) with the checks and reasons every door shares, `name`
    being the door's word for it (MQTT `instruct`, HTTP `instructions`): blank is none; clean, stripped,
    at most `max_chars`; on a bundle that cannot follow one it is ignored with a warning (as the official
    implementation does for 0.6B CustomVoice) instead of failing at synthesis."""
    if raw is None or not raw.strip():
        return None, ()
    instruct = check_clean(name, raw, allow_line_breaks=True).strip()
    if len(instruct) > max_chars:
        raise RequestError(f"{name} too long ({len(instruct)} characters > {max_chars})")
    if not supported:
        return None, (INSTRUCT_IGNORED.format(name),)
    return instruct, ()


def sentences(text: str, language: str = "auto") -> list[str]:
    """The sentences of `text` as written (no lexicon, no normalisation): for text that arrives in chunks."""
    return [piece.text for piece in prepare(text, language, normalize=False).pieces]


def frame_budget(sentence: str, max_frames: int) -> int:
    """Frames one sentence may take: generous for speech, bounded for a runaway generation."""
    return min(max_frames, FRAMES_BASE + int(FRAMES_PER_CHAR * weight(sentence)))


BACKGROUND_RANK = -1
"""The engine rank of a network request (HTTP, Wyoming): below every announcement (the appliance's levels
rank 0 and up), so the box's own speaker never queues behind a network client, and a network request
is the first to step aside when the KV cache is full."""


def sentence_request(
    request_id: str,
    sentence: str,
    *,
    language: str,
    voice: str | None,
    instruct: str | None,
    rank: int,
    urgent: bool = False,
    max_frames: int,
    voices: VoiceCatalog | None = None,
    seed: int | None = None,
    first_chunk_frames: int | None = None,
) -> Request:
    """The engine request for one sentence, its frame budget derived from the sentence.

    `voice` is a preset speaker or a registered voice of `voices`, which becomes its `voice:NAME`
    reference key or its VoiceDesign description. `seed` makes the sampling
    reproducible (same seed, text, voice and engine build: same audio).
    """
    if voices is not None:
        choice = voices.choice(voice, instruct)
        speaker, ref_audio, instruct = choice.speaker, choice.ref_audio, choice.instruct
    else:
        speaker, ref_audio = voice, None
    return Request(
        id=request_id,
        text=sentence,
        language=language,
        speaker=speaker,
        instruct=instruct,
        rank=rank,
        urgent=urgent,
        seed=seed,
        max_frames=frame_budget(sentence, max_frames),
        ref_audio=ref_audio,
        first_chunk_frames=first_chunk_frames,
    )
