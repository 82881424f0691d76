"""The answer to Wyoming's `describe`: one TTS program, a voice per voice offered, as Home Assistant shows it.

Home Assistant lists a Wyoming voice by its description (`voice.description or voice.name`) under each
language it names. wyoming-piper describes a voice by speaker and quality ("lessac (medium)"); here a
voice is described by speaker, the speaker's own language and the model size: "Vivian (Chinese, 0.6B)".
Every voice speaks every language of the bundle, so each names all of the bundle's language codes and
an assistant in any of them can pick it. The voice `name` stays the one requests use (`vivian`).
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


def wyoming_info(offer: Offer) -> Info:
    """One TTS program (`qwen3tts`, streaming text supported) with every voice the offer lists."""
    codes = list(offer.language_codes)
    registered = {name.lower() for name in offer.catalog.registered_names}
    voices = [
        TtsVoice(
            name=name,
            description=voice_description(name, offer.model, registered=name in registered),
            attribution=ATTRIBUTION,
            installed=True,
            version=None,
            languages=codes,
        )
        for name in offer.voice_names
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
