"""What the network servers offer a client: the loaded bundle's name, voices, languages and defaults.

Voice and language names are resolved by the daemon's one `VoiceCatalog` (voices/catalog.py), the lookup
the MQTT door uses too, so a registered voice added on SIGHUP reaches every door at once. What is the
servers' own: the listing as network clients have always seen it — names in lower case, the one voice
`default` of a bundle without preset speakers (Base), and ISO 639-1 language codes, by which Home
Assistant filters TTS voices — and the defaults a request that names no voice or language gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwen3tts.errors import RequestError
from qwen3tts.synthesis import SpeechDefaults
from qwen3tts.text.languages import MODEL_TO_ISO
from qwen3tts.voices.catalog import VoiceCatalog

DEFAULT_VOICE = "default"  # the one voice a bundle without preset speakers (Base) offers
SAMPLE_RATE = 24000


@dataclass(frozen=True)
class Offer:
    """The loaded bundle as network clients see it."""

    name: str
    """Shown as the model name (the bundle directory name)."""
    catalog: VoiceCatalog
    """The daemon's voices and languages; its registered part is replaced on SIGHUP and read live."""
    defaults: SpeechDefaults
    """Voice, language and instruct of a request that names none (the `voice` settings at start)."""
    sample_rate: int = SAMPLE_RATE
    supports_instruct: bool = True
    """False for bundles without an instruct turn (Base, 0.6B CustomVoice): instructions are ignored."""
    model: str = ""
    """The model as its user knows it, size then kind: `0.6B CustomVoice` (empty when unknown)."""

    @classmethod
    def from_spec(cls, name: str, spec, voice_settings, catalog: VoiceCatalog | None = None) -> Offer:
        """From a ModelSpec (`.speakers`, `.languages`), the `voice` settings and the daemon's catalog
        (None: a catalog of the bundle's presets, no registered voices)."""
        catalog = catalog if catalog is not None else VoiceCatalog(spec.speakers, spec.languages)
        defaults = SpeechDefaults.from_settings(voice_settings, catalog.speakers)
        supports_instruct = getattr(spec, "supports_instruct", True)
        return cls(name, catalog, defaults, supports_instruct=supports_instruct, model=model_label(spec))

    @property
    def voice_names(self) -> tuple[str, ...]:
        """The voices a client may pick, in lower case: the presets (or `default`), then the registered."""
        presets = self.catalog.speakers or (DEFAULT_VOICE,)
        return tuple(name.lower() for name in (*presets, *self.catalog.registered_names))

    @property
    def languages(self) -> tuple[str, ...]:
        """Model language names of the bundle (`auto` is accepted too)."""
        return self.catalog.languages

    @property
    def language_codes(self) -> tuple[str, ...]:
        """ISO 639-1 codes of the bundle's languages, each once, in the bundle's order (dialects are zh)."""
        codes = (MODEL_TO_ISO.get(name.lower()) for name in self.languages)
        return tuple(dict.fromkeys(code for code in codes if code))

    def resolve_voice(self, name: str | None) -> str | None:
        """The voice for the engine request (the catalog's spelling; None: the bundle's own voice);
        RequestError naming the known voices when there is none of that name."""
        if not name or not name.strip():
            return self.defaults.voice
        name = name.strip()
        is_default = name.lower() == DEFAULT_VOICE and self.catalog.find(name) is None
        if is_default and not self.catalog.speakers:
            return None
        if not self.catalog.names:  # the catalog would let any name through; a client gets the list
            raise RequestError(f"unknown voice {name[:64]!r}; known: {DEFAULT_VOICE}")
        return self.catalog.resolve(name)

    def resolve_language(self, tag: str | None) -> str:
        """The engine language for a model name (`english`) or tag (`en`, `en-US`); none: the default."""
        if not tag or not tag.strip():
            return self.defaults.language
        return self.catalog.resolve_language(tag)


SIZES = {"0b6": "0.6B", "1b7": "1.7B"}
KINDS = {"custom_voice": "CustomVoice", "voice_design": "VoiceDesign", "base": "Base"}


def model_label(spec) -> str:
    """`0.6B CustomVoice` from a ModelSpec's `size` and `variant` (the release's names for them)."""
    size = SIZES.get(getattr(spec, "size", ""), "")
    kind = KINDS.get(getattr(spec, "variant", ""), "")
    return " ".join(part for part in (size, kind) if part)
