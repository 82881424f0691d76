"""What Home Assistant shows for the Wyoming server: voices named as requests name them, described by
speaker, the speaker's language and the model size (as wyoming-piper describes by speaker and quality)."""

from types import SimpleNamespace

from qwen3tts.servers.offer import Offer, model_label
from qwen3tts.servers.wyoming_info import voice_description, wyoming_info
from qwen3tts.settings import VoiceSettings
from qwen3tts.voices.catalog import VoiceCatalog, VoiceChoice

SPEC = SimpleNamespace(
    variant="custom_voice", size="0b6", speakers=("vivian", "uncle_fu", "ono_anna", "dylan", "newcomer"),
    languages=("chinese", "english", "japanese", "beijing_dialect"),
)  # fmt: skip


def test_the_model_is_named_by_size_and_kind_as_the_release_names_them():
    assert model_label(SPEC) == "0.6B CustomVoice"
    assert model_label(SimpleNamespace(variant="voice_design", size="1b7")) == "1.7B VoiceDesign"
    assert model_label(SimpleNamespace(speakers=())) == ""  # a spec that says nothing


def test_describe_lists_each_voice_by_speaker_language_and_size_never_the_bundle_directory():
    offer = Offer.from_spec("bundle-tiny", SPEC, VoiceSettings())
    [program] = wyoming_info(offer).tts
    assert program.name == "qwen3tts"
    assert program.description == "Qwen3-TTS 0.6B CustomVoice on OpenVINO"
    shown = {voice.name: voice.description for voice in program.voices}
    assert shown == {
        "vivian": "Vivian (Chinese, 0.6B)",
        "uncle_fu": "Uncle Fu (Chinese, 0.6B)",
        "ono_anna": "Ono Anna (Japanese, 0.6B)",
        "dylan": "Dylan (Chinese, Beijing dialect, 0.6B)",
        "newcomer": "Newcomer (0.6B)",  # a speaker the model card does not list: no language guessed
    }
    assert not any("bundle-tiny" in (voice.description or "") for voice in program.voices)
    # every voice speaks every language: Home Assistant offers each under every code
    assert all(voice.languages == ["zh", "en", "ja"] for voice in program.voices)


def test_registered_voices_and_the_voice_of_a_base_bundle_say_what_they_are():
    catalog = VoiceCatalog((), ("english",))
    catalog.set_registered({"front_desk": VoiceChoice(ref_audio="voice:front_desk")}, {})
    spec = SimpleNamespace(variant="base", size="1b7", speakers=(), languages=("english",))
    offer = Offer.from_spec("my-base", spec, VoiceSettings(), catalog)
    [program] = wyoming_info(offer).tts
    assert {v.name: v.description for v in program.voices} == {
        "default": "Default (the bundle's voice, 1.7B)",
        "front_desk": "Front Desk (registered voice, 1.7B)",
    }


def test_a_description_without_a_known_model_is_the_speaker_alone_or_with_its_language():
    assert voice_description("ryan", "") == "Ryan (English)"
    assert voice_description("zed", "") == "Zed"
