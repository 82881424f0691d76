"""What Home Assistant shows for the Wyoming server: voices named as requests name them, described by
speaker, the speaker's language and the model size (as wyoming-piper describes by speaker and quality)."""

from types import SimpleNamespace

from qwen3tts.servers.offer import Offer, model_label
from qwen3tts.servers.wyoming_info import split_voice_id, voice_description, wyoming_info
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
    shown = {voice.name: voice.description for voice in program.voices if voice.languages == ["en"]}
    assert shown == {
        "vivian@en": "Vivian (Chinese, 0.6B)",
        "uncle_fu@en": "Uncle Fu (Chinese, 0.6B)",
        "ono_anna@en": "Ono Anna (Japanese, 0.6B)",
        "dylan@en": "Dylan (Chinese, Beijing dialect, 0.6B)",
        "newcomer@en": "Newcomer (0.6B)",  # a speaker the model card does not list: no language guessed
    }
    assert not any("bundle-tiny" in (voice.description or "") for voice in program.voices)


def test_every_voice_is_listed_under_every_language_code_its_name_carrying_the_code():
    """Home Assistant sends only the voice's name, never its pipeline's language: the name carries it."""
    [program] = wyoming_info(Offer.from_spec("bundle-tiny", SPEC, VoiceSettings())).tts
    listed = [(voice.name, voice.languages) for voice in program.voices]
    assert listed == [
        (f"{speaker}@{code}", [code]) for speaker in SPEC.speakers for code in ("zh", "en", "ja")
    ]
    assert {split_voice_id(name) for name, _ in listed} == {
        (speaker, code) for speaker in SPEC.speakers for code in ("zh", "en", "ja")
    }
    assert split_voice_id("vivian") == ("vivian", None)
    assert split_voice_id("vivian@") == ("vivian@", None) and split_voice_id("@de") == ("@de", None)


def test_registered_voices_and_the_voice_of_a_base_bundle_say_what_they_are():
    catalog = VoiceCatalog((), ("english",))
    catalog.set_registered({"front_desk": VoiceChoice(ref_audio="voice:front_desk")}, {})
    spec = SimpleNamespace(variant="base", size="1b7", speakers=(), languages=("english",))
    offer = Offer.from_spec("my-base", spec, VoiceSettings(), catalog)
    [program] = wyoming_info(offer).tts
    assert {v.name: v.description for v in program.voices} == {
        "default@en": "Default (the bundle's voice, 1.7B)",
        "front_desk@en": "Front Desk (registered voice, 1.7B)",
    }


def test_a_description_without_a_known_model_is_the_speaker_alone_or_with_its_language():
    assert voice_description("ryan", "") == "Ryan (English)"
    assert voice_description("zed", "") == "Zed"
