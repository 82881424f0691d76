"""The one voice lookup (voices/catalog.py): preset speakers then registered voices in one order everywhere;
names resolved in any case, unknown ones refused naming the known; registered names become request fields."""

from __future__ import annotations

import pytest

from qwen3tts.appliance.mqtt.discovery import voice_messages
from qwen3tts.appliance.mqtt.events import DiscoveryConfig, Voices
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.errors import RequestError
from qwen3tts.voices.catalog import VoiceCatalog, VoiceChoice


def catalog() -> VoiceCatalog:
    voices = VoiceCatalog(("Ryan", "Vivian"), ("english", "german"))
    voices.set_registered(
        {"anna": VoiceChoice(ref_audio="voice:anna"), "calm": VoiceChoice(instruct="A calm low voice.")},
        {"anna": "voice:anna:1234"},
    )
    return voices


def test_names_are_the_preset_speakers_then_the_registered_voices_in_the_registrys_order():
    voices = catalog()
    assert voices.names == ("Ryan", "Vivian", "anna", "calm")
    assert voices.registered_names == ("anna", "calm")


def test_resolve_finds_any_spelling_and_refuses_everything_else_naming_the_known():
    voices = catalog()
    assert voices.resolve("vivian") == "Vivian" and voices.resolve("ANNA") == "anna"
    assert voices.find("voice:anna") is None  # a request key is not a name
    with pytest.raises(RequestError, match=r"unknown voice 'bob'; known: Ryan, Vivian, anna, calm"):
        voices.resolve("bob")


def test_an_empty_catalog_accepts_any_name_and_language():
    voices = VoiceCatalog()
    assert voices.resolve("whoever") == "whoever" and voices.resolve_language("de-DE") == "de-DE"


def test_languages_resolve_from_names_and_tags_in_the_bundles_spelling():
    voices = VoiceCatalog((), ("English", "German"))
    assert voices.resolve_language("de-DE") == "German" and voices.resolve_language("english") == "English"
    assert voices.resolve_language("auto") == "auto"
    with pytest.raises(RequestError, match="ja"):
        voices.resolve_language("ja")


def test_choice_maps_registered_voices_and_design_descriptions_and_leaves_presets_to_the_engine():
    voices = catalog()
    assert voices.choice("Anna", "cheerful") == VoiceChoice(ref_audio="voice:anna", instruct="cheerful")
    assert voices.choice("calm", "cheerful") == VoiceChoice(instruct="A calm low voice.")
    assert voices.choice("Ryan", None) == VoiceChoice(speaker="Ryan")


def test_identity_is_a_registered_voices_content_and_a_presets_name():
    voices = catalog()
    assert voices.identity("ANNA") == "voice:anna:1234" and voices.identity("Ryan") == "Ryan"


def test_set_registered_says_whether_the_names_changed():
    voices = catalog()
    same = {"anna": VoiceChoice(ref_audio="voice:anna"), "calm": VoiceChoice(instruct="x")}
    assert voices.set_registered(same, {}) is False
    assert voices.set_registered({}, {}) is True and voices.names == ("Ryan", "Vivian")


def test_the_voice_list_is_announced_on_the_voices_topic_and_in_the_ha_select():
    voices, topics = catalog(), Topics(base="qwen3tts/hall")
    only = voice_messages(topics, voices, discovery=False, sw_version="1")
    assert only == [Voices(voices=("Ryan", "Vivian", "anna", "calm"), languages=("english", "german"))]
    announced = voice_messages(topics, voices, discovery=True, sw_version="1")
    select = next(m for m in announced if isinstance(m, DiscoveryConfig) and m.object_id == "voice")
    assert select.config["options"] == ["Ryan", "Vivian", "anna", "calm"]
