"""The answer to Wyoming's `describe`: one TTS program, a voice per voice offered, as Home Assistant shows it.

Home Assistant lists a Wyoming voice by its description (`voice.description or voice.name`) under each
language it names. wyoming-piper describes a voice by speaker and quality ("lessac (medium)"); here a
voice is described by speaker, the speaker's own language and the model size: "Vivian (Chinese, 0.6B)".
Every voice speaks every language of the bundle, so each is listed once per language code, named
`vivian@de`: Home Assistant sends a request only the voice's name, never its pipeline's language, so the
name carries it (wyoming_events.voice_fields reads it back). A plain `vivian` is still accepted.
"""

from __future__ import annotations

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice

from qwen3tts import __version__
from qwen3tts.servers.offer import DEFAULT_VOICE, Offer

ATTRIBUTION = Attribution(name="Qwen", url="https://github.com/QwenLM/Qwen3-TTS")

SPEAKER_LANGUAGES = {
    "vivian": "Chinese",
    "serena": "Chinese",
    "uncle_fu": "Chinese",
    "dylan": "Chinese, Beijing dialect",
    "eric": "Chinese, Sichuan dialect",
    "ryan": "English",
    "aiden": "English",
    "ono_anna": "Japanese",
    "sohee": "Korean",
}
"""The native language of each preset speaker of the released CustomVoice checkpoints (their model card)."""


LANGUAGE_MARK = "@"
"""Between a voice and the language code it is listed under; never in a voice name (voices/registry.py)."""


def voice_id(name: str, code: str | None) -> str:
    """`vivian@de`: the voice `vivian` speaking German; `vivian` when there is no code."""
    return f"{name}{LANGUAGE_MARK}{code}" if code else name


def split_voice_id(voice: str) -> tuple[str, str | None]:
    """(`vivian`, `de`) for `vivian@de`; (`vivian`, None) for a plain name."""
    name, mark, code = voice.rpartition(LANGUAGE_MARK)
    return (name, code) if mark and name and code else (voice, None)


def wyoming_info(offer: Offer) -> Info:
    """One TTS program (`qwen3tts`, streaming text supported) with every voice the offer lists, once per
    language code (`vivian@en`, `vivian@de`, ...)."""
    registered = {name.lower() for name in offer.catalog.registered_names}
    voices = [
        TtsVoice(
            name=voice_id(name, code),
            description=voice_description(name, offer.model, registered=name in registered),
            attribution=ATTRIBUTION,
            installed=True,
            version=None,
            languages=[code] if code else [],
        )
        for name in offer.voice_names
        for code in offer.language_codes or (None,)
    ]
    program = TtsProgram(
        name="qwen3tts",
        description=" ".join(("Qwen3-TTS", *offer.model.split(), "on OpenVINO")),
        attribution=ATTRIBUTION,
        installed=True,
        version=__version__,
        voices=voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])


def voice_description(name: str, model: str, registered: bool = False) -> str:
    """`Vivian (Chinese, 0.6B)`, `Uncle Fu (Chinese, 1.7B)`, `Front Desk (registered voice, 0.6B)`."""
    if registered:
        kind = "registered voice"
    else:
        kind = "the bundle's voice" if name == DEFAULT_VOICE else SPEAKER_LANGUAGES.get(name.lower(), "")
    size = model.split(" ")[0] if model else ""
    facts = ", ".join(fact for fact in (kind, size) if fact)
    title = " ".join(word[:1].upper() + word[1:] for word in name.replace("_", " ").split())
    return f"{title} ({facts})" if facts else title
