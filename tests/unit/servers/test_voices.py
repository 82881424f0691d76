"""Voice and language names a network client may send, resolved against the bundle."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.servers.voices import BundleInfo

BUNDLE = BundleInfo(
    name="bundle-tiny",
    voices=("vivian", "ryan"),
    languages=("chinese", "english", "german", "beijing_dialect"),
)


def test_voices_resolve_case_insensitively_and_default_to_the_first_speaker():
    assert BUNDLE.resolve_voice("Ryan") == "ryan"
    assert BUNDLE.resolve_voice(None) == "vivian"
    with pytest.raises(RequestError, match="unknown voice 'alloy'; known: vivian, ryan"):
        BUNDLE.resolve_voice("alloy")


def test_the_configured_default_voice_wins_over_the_first_speaker():
    assert BundleInfo("b", ("vivian", "ryan"), (), default_voice="ryan").resolve_voice("") == "ryan"


def test_a_bundle_without_speakers_offers_one_default_voice():
    base = BundleInfo("base", (), ("english",))
    assert base.voice_names == ("default",)
    assert base.resolve_voice("default") is None
    with pytest.raises(RequestError):
        base.resolve_voice("vivian")


@pytest.mark.parametrize(
    ("given", "engine"),
    [("english", "english"), ("EN", "english"), ("en-US", "english"), ("zh_CN", "chinese"),
     ("de", "german"), ("auto", "auto"), (None, "auto"), ("beijing_dialect", "beijing_dialect")],
)  # fmt: skip
def test_languages_resolve_from_names_and_codes(given, engine):
    assert BUNDLE.resolve_language(given) == engine


def test_an_unknown_language_names_the_known_ones_with_codes():
    with pytest.raises(
        RequestError, match=r"unknown language 'fr'; known: auto, chinese \(zh\), english \(en\)"
    ):
        BUNDLE.resolve_language("fr")


def test_language_codes_are_listed_once_in_bundle_order():
    assert BUNDLE.language_codes == ("zh", "en", "de")


def test_registered_voices_are_listed_after_the_presets_and_resolve_by_name():
    from qwen3tts.voices.registered import RegisteredVoices, VoiceChoice

    registered = RegisteredVoices({"Anna": VoiceChoice(ref_audio="voice:Anna")})
    base = BundleInfo("base", (), ("english",), registered=registered)
    assert base.voice_names == ("default", "anna")
    assert base.resolve_voice("ANNA") == "anna"
    assert registered.choice(base.resolve_voice("anna"), None) == VoiceChoice(ref_audio="voice:Anna")
    with pytest.raises(RequestError, match="known: default, anna"):
        base.resolve_voice("/tmp/ref.wav")
