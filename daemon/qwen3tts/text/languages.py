"""Language tags a message may carry -> the model's language names.

The model names its languages in English words (`codec_language_id` in the release config:
chinese, english, ... plus the Chinese dialects sichuan_dialect and beijing_dialect). Callers speak
ISO 639-1 / BCP 47 (`en`, `en-GB`, `zh-CN`) or those names; `resolve_language` maps either to a name
the bundle can speak, or rejects the tag with a reason the sender can act on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from qwen3tts.errors import RequestError

AUTO = "auto"
# The shape of a BCP 47 tag (primary language subtag, then subtags of 1-8 letters or digits):
# a malformed tag such as "en-" or "--" is refused rather than guessed at.
_TAG_SHAPE = re.compile(r"[a-z]{2,3}(-[a-z0-9]{1,8})*")

# The release's languages, as `supported` defaults to when no bundle is at hand (e.g. `qwen3tts text`).
MODEL_LANGUAGES: tuple[str, ...] = (
    "chinese",
    "english",
    "japanese",
    "korean",
    "german",
    "french",
    "russian",
    "portuguese",
    "spanish",
    "italian",
    "sichuan_dialect",
    "beijing_dialect",
)

# ISO 639-1 (and the ISO 639-3 codes people also send) -> model language name.
ISO_TO_MODEL: dict[str, str] = {
    "zh": "chinese",
    "zho": "chinese",
    "cmn": "chinese",
    "en": "english",
    "eng": "english",
    "ja": "japanese",
    "jpn": "japanese",
    "ko": "korean",
    "kor": "korean",
    "de": "german",
    "deu": "german",
    "fr": "french",
    "fra": "french",
    "ru": "russian",
    "rus": "russian",
    "pt": "portuguese",
    "por": "portuguese",
    "es": "spanish",
    "spa": "spanish",
    "it": "italian",
    "ita": "italian",
}

# Languages people ask for that the model does not speak, with what to say instead of "unknown".
_NOT_SPOKEN: dict[str, str] = {
    "yue": "Cantonese",
    "zh-yue": "Cantonese",
    "zh-hk": "Cantonese",
    "wuu": "Wu Chinese",
    "nan": "Min Nan",
}

MODEL_TO_ISO: dict[str, str] = {name: code for code, name in ISO_TO_MODEL.items() if len(code) == 2}
MODEL_TO_ISO.update({"sichuan_dialect": "zh", "beijing_dialect": "zh"})


def resolve_language(tag: str | None, supported: Iterable[str] = MODEL_LANGUAGES) -> str:
    """The supported model language name for `tag`, or "auto" for None/""/"auto".

    Accepts a model name (`english`, `Sichuan_Dialect`), ISO 639-1/639-3 (`en`, `deu`) or a BCP 47
    tag whose primary subtag is one of those (`en-GB`, `zh-Hans-CN`, `de_DE`). Raises RequestError
    naming the tag and the languages the bundle speaks when it cannot be spoken.
    """
    names = tuple(name.lower() for name in supported)
    if tag is None:
        return AUTO
    if not isinstance(tag, str):
        raise RequestError(f"language must be a string, got {type(tag).__name__}")
    wanted = tag.strip().lower().replace("_", "-")
    if wanted in ("", AUTO):
        return AUTO
    if wanted.replace("-", "_") in names:
        return wanted.replace("-", "_")
    if wanted in _NOT_SPOKEN or wanted.split("-")[0] in _NOT_SPOKEN:
        spoken = _NOT_SPOKEN.get(wanted) or _NOT_SPOKEN[wanted.split("-")[0]]
        raise RequestError(f"language {tag!r} ({spoken}) is not spoken by this model ({_known(names)})")
    if wanted.replace("-", "_") in MODEL_LANGUAGES:
        raise RequestError(f"language {tag!r} is not in this bundle ({_known(names)})")
    primary = wanted.split("-")[0]
    name = ISO_TO_MODEL.get(primary) if _TAG_SHAPE.fullmatch(wanted) else None
    if name is None:
        raise RequestError(f"unknown language {tag!r}: use a model name or ISO/BCP 47 tag ({_known(names)})")
    if name not in names:
        raise RequestError(f"language {tag!r} ({name}) is not in this bundle ({_known(names)})")
    return name


def iso_code(name: str) -> str:
    """The ISO 639-1 code of a model language name (dialects -> zh); "en" for anything unknown."""
    return MODEL_TO_ISO.get(name, "en")


def _known(names: tuple[str, ...]) -> str:
    return "known: auto, " + ", ".join(sorted(names))
