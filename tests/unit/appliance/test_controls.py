"""MQTT controls applied to the running parts (appliance/controls.py): stop reaches the announcer, the
volume the playback, and voice/set makes a known voice (any case, listed spelling) the default while
an unknown name changes nothing."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from qwen3tts.service.controls import apply_control
from qwen3tts.appliance.announcements.lookahead import Voice
from qwen3tts.appliance.mqtt.messages import SetVoice, SetVolume, Stop
from qwen3tts.voices.registered import RegisteredVoices, VoiceChoice
from qwen3tts.service.voice_catalog import VoiceCatalog


def parts():
    announcer = SimpleNamespace(voice=Voice("Ryan", "auto", None), commands=[])
    announcer.command = announcer.commands.append
    playback = SimpleNamespace(volume=1.0)
    registered = RegisteredVoices({"anna": VoiceChoice(ref_audio="voice:anna")})
    catalog = VoiceCatalog(("Ryan", "Vivian"), ("english",), registered)
    return announcer, playback, catalog


def apply(command, announcer, playback, catalog) -> None:
    apply_control(command, announcer=announcer, playback=playback, catalog=catalog)


def test_stop_goes_to_the_announcer_and_the_volume_to_the_playback():
    announcer, playback, catalog = parts()
    stop = Stop(scope="id", id="a1")
    apply(stop, announcer, playback, catalog)
    apply(SetVolume(volume=0.3), announcer, playback, catalog)
    assert announcer.commands == [stop] and playback.volume == 0.3


def test_voice_set_takes_any_case_of_a_preset_or_registered_voice():
    announcer, playback, catalog = parts()
    apply(SetVoice(voice="VIVIAN"), announcer, playback, catalog)
    assert announcer.voice.voice == "Vivian"
    apply(SetVoice(voice="Anna"), announcer, playback, catalog)
    assert announcer.voice.voice == "anna"


def test_an_unknown_voice_changes_nothing_and_is_logged(caplog):
    announcer, playback, catalog = parts()
    with caplog.at_level(logging.WARNING):
        apply(SetVoice(voice="bob"), announcer, playback, catalog)
    assert announcer.voice == Voice("Ryan", "auto", None) and playback.volume == 1.0
    assert "unknown voice 'bob' ignored" in caplog.text
