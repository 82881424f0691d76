"""What a network client may ask for: the bundle's voices and languages, and the defaults.

Model language names (english, chinese, ...) are what the engine takes; Home Assistant filters TTS
voices by language code (en, zh, ...), so the Wyoming server lists codes and maps them back here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from qwen3tts.errors import RequestError

# ISO 639-1 codes of the model's languages; dialects share their language's code.
LANGUAGE_CODES = {
    "chinese": "zh",
    "english": "en",
    "german": "de",
    "italian": "it",
    "portuguese": "pt",
    "spanish": "es",
    "japanese": "ja",
    "korean": "ko",
    "french": "fr",
    "russian": "ru",
}
DEFAULT_VOICE = "default"  # the one voice a bundle without preset speakers (Base) offers
SAMPLE_RATE = 24000


@dataclass(frozen=True)
class BundleInfo:
    """The loaded bundle as network clients see it."""

    name: str
    """Shown as the model name (e.g. the bundle directory name)."""
    voices: tuple[str, ...]
    """Preset speaker names, lower case; empty for a Base bundle (then one voice, 'default')."""
    languages: tuple[str, ...]
    """Model language names the bundle knows ('auto' is always accepted too)."""
    default_voice: str | None = None
    """Voice used when a request names none; None is the bundle's first speaker."""
    default_language: str = "auto"
    default_instruct: str | None = None
    sample_rate: int = SAMPLE_RATE
    registered: Any = field(default=None, compare=False)
    """The operator's named voices (appliance RegisteredVoices: `.names`, `.choice()`), read live so
    a SIGHUP reload reaches the network servers too; None offers presets only."""

    @classmethod
    def from_spec(cls, name: str, spec, voice_settings, registered=None) -> BundleInfo:
        """From a ModelSpec (runtime.spec) and the `voice` settings section."""
        return cls(
            registered=registered,
            name=name,
            voices=tuple(s.lower() for s in spec.speakers),
            languages=tuple(spec.languages),
            default_voice=voice_settings.voice.lower() or None,
            default_language=voice_settings.language,
            default_instruct=voice_settings.instruct or None,
        )

    @property
    def registered_names(self) -> tuple[str, ...]:
        return tuple(n.lower() for n in self.registered.registered_names) if self.registered is not None else ()

    @property
    def voice_names(self) -> tuple[str, ...]:
        return (self.voices or (DEFAULT_VOICE,)) + self.registered_names

    @property
    def language_codes(self) -> tuple[str, ...]:
        """Codes of the bundle's languages, each once, in the bundle's order."""
        return tuple(dict.fromkeys(code for name in self.languages if (code := _code(name))))

    def resolve_voice(self, voice: str | None) -> str | None:
        """The engine speaker for a requested voice name (case-insensitive); RequestError if unknown."""
        if not voice:
            return self.default_voice or (self.voices[0] if self.voices else None)
        name = voice.strip().lower()
        if not self.voices and name == DEFAULT_VOICE:
            return None
        if name not in self.voices and name not in self.registered_names:
            raise RequestError(f"unknown voice {voice!r}; known: {', '.join(self.voice_names)}")
        return name

    def resolve_language(self, language: str | None) -> str:
        """The engine language for a name ('english') or code ('en', 'en-US'); RequestError if unknown."""
        if not language:
            return self.default_language
        wanted = language.strip().lower()
        if wanted == "auto" or wanted in self.languages:
            return wanted
        code = wanted.replace("_", "-").split("-")[0]
        for name in self.languages:
            if _code(name) == code:
                return name
        known = ", ".join(_names_and_codes(self.languages))
        raise RequestError(f"unknown language {language!r}; known: auto, {known}")


def _code(name: str) -> str | None:
    return LANGUAGE_CODES.get(name)


def _names_and_codes(names: Iterable[str]) -> list[str]:
    return [f"{name} ({code})" if (code := _code(name)) else name for name in names]
