"""What a network client may ask for: voice and language names resolved by the daemon's one VoiceCatalog."""

from types import SimpleNamespace

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.servers.offer import Offer
from qwen3tts.settings import VoiceSettings
from qwen3tts.voices.catalog import VoiceCatalog, VoiceChoice

SPEC = SimpleNamespace(
    speakers=("vivian", "ryan"), languages=("chinese", "english", "german", "beijing_dialect")
)
OFFER = Offer.from_spec("bundle-tiny", SPEC, VoiceSettings())


def base_offer(**registered: VoiceChoice) -> Offer:
    catalog = VoiceCatalog((), ("english",))
    catalog.set_registered(registered, {})
    return Offer.from_spec("base", SimpleNamespace(speakers=(), languages=()), VoiceSettings(), catalog)


def test_voices_resolve_case_insensitively_and_default_to_the_first_speaker():
    assert OFFER.resolve_voice("Ryan") == "ryan"
    assert OFFER.resolve_voice(None) == "vivian"
    assert OFFER.resolve_voice("  ") == "vivian"
    with pytest.raises(RequestError, match="unknown voice 'alloy'; known: ryan, vivian"):
        OFFER.resolve_voice("alloy")


def test_the_configured_defaults_win_over_the_first_speaker_and_auto():
    offer = Offer.from_spec("b", SPEC, VoiceSettings(voice="Ryan", language="german", instruct="calm"))
    assert offer.resolve_voice("") == "ryan"
    assert offer.resolve_language(None) == "german"
    assert offer.defaults.instruct == "calm"


def test_a_bundle_without_speakers_offers_one_default_voice_and_refuses_others():
    base = base_offer()
    assert base.voice_names == ("default",)
    assert base.resolve_voice("Default") is None and base.resolve_voice(None) is None
    with pytest.raises(RequestError, match="unknown voice 'vivian'; known: default"):
        base.resolve_voice("vivian")


def test_a_bundle_with_speakers_has_no_voice_called_default():
    with pytest.raises(RequestError, match="unknown voice 'default'"):
        OFFER.resolve_voice("default")


@pytest.mark.parametrize(
    ("given", "engine"),
    [("english", "english"), ("EN", "english"), ("en-US", "english"), ("zh_CN", "chinese"),
     ("de", "german"), ("auto", "auto"), (None, "auto"), ("beijing_dialect", "beijing_dialect")],
)  # fmt: skip
def test_languages_resolve_from_names_and_codes(given, engine):
    assert OFFER.resolve_language(given) == engine


@pytest.mark.parametrize("tag", ["fr", "klingon", "yue"])
def test_a_language_the_bundle_cannot_speak_names_the_known_ones(tag):
    with pytest.raises(RequestError, match=r"known: auto, beijing_dialect, chinese, english, german"):
        OFFER.resolve_language(tag)


def test_language_codes_are_listed_once_in_bundle_order():
    assert OFFER.language_codes == ("zh", "en", "de")  # beijing_dialect is zh: listed once


def test_registered_voices_are_listed_after_the_presets_in_lower_case_and_resolve_by_name():
    base = base_offer(Anna=VoiceChoice(ref_audio="voice:Anna"))
    assert base.voice_names == ("default", "anna")
    assert base.resolve_voice("ANNA") == "Anna"  # the catalog's spelling goes to the engine request
    assert base.catalog.choice(base.resolve_voice("anna"), None) == VoiceChoice(ref_audio="voice:Anna")
    with pytest.raises(RequestError, match="known: Anna"):
        base.resolve_voice("/tmp/ref.wav")


def test_voices_registered_after_start_are_offered_at_once():
    catalog = VoiceCatalog(SPEC.speakers, SPEC.languages)
    offer = Offer.from_spec("b", SPEC, VoiceSettings(), catalog)
    catalog.set_registered({"Newsreader": VoiceChoice(instruct="a calm newsreader")}, {})  # SIGHUP
    assert offer.voice_names == ("vivian", "ryan", "newsreader")
    assert offer.resolve_voice("newsreader") == "Newsreader"
