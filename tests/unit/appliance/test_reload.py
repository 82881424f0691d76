"""SIGHUP's settings logic (appliance/reload.py): what the file changed reaches the running daemon,
what it did not change keeps the value set over MQTT, and a file that does not load changes nothing."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from types import SimpleNamespace

from qwen3tts.appliance.announcements.lookahead import Voice
from qwen3tts.service.reload import carry_changes, read_settings
from qwen3tts.synthesis import TextOptions
from qwen3tts.settings import AudioSettings, Settings, TextSettings, VoiceSettings

SPEAKERS = ("Ryan", "Vivian")


def settings(
    volume=1.0, muted=False, voice="ryan", language="auto", normalize=True, lexicon=None
) -> Settings:
    return Settings(
        audio=AudioSettings(volume=volume, muted=muted),
        voice=VoiceSettings(voice=voice, language=language),
        text=TextSettings(normalize=normalize, lexicon=lexicon),
    )


def live(old: Settings):
    """The daemon's live state after `old` was loaded, then volume and voice were set over MQTT."""
    playback = SimpleNamespace(volume=0.3, muted=old.audio.muted)  # volume/set 0.3 arrived
    voice = replace(Voice.from_settings(old.voice, SPEAKERS), voice="Vivian")  # voice/set vivian arrived
    return playback, voice, TextOptions(normalize=old.text.normalize)


def test_a_file_that_changed_neither_volume_nor_voice_keeps_what_mqtt_set():
    old = settings()
    playback, voice, text = live(old)
    carry_changes(old, settings(), playback, voice, text, SPEAKERS)
    assert (playback.volume, playback.muted, voice.voice, voice.language) == (0.3, False, "Vivian", "auto")


def test_what_the_file_changed_wins_field_by_field():
    old = settings()
    playback, voice, text = live(old)
    fresh = settings(volume=0.8, muted=True, language="german")  # the voice name is not touched
    carry_changes(old, fresh, playback, voice, text, SPEAKERS)
    assert (playback.volume, playback.muted) == (0.8, True)
    assert (voice.voice, voice.language) == ("Vivian", "german")

    voice.voice = "Ryan"  # voice/set ryan arrived; then the file's voice changes from ryan to VIVIAN
    carry_changes(fresh, replace(fresh, voice=VoiceSettings(voice="VIVIAN", language="german")), playback,
                  voice, text, SPEAKERS)  # fmt: skip
    assert voice.voice == "Vivian"  # in the bundle's spelling


def test_text_options_follow_the_file_and_a_broken_lexicon_keeps_the_previous_one(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text("words: {Hbf: Hauptbahnhof}", encoding="utf-8")
    old = settings()
    playback, voice, text = live(old)
    fresh = settings(normalize=False, lexicon=path)
    carry_changes(old, fresh, playback, voice, text, SPEAKERS)
    assert text.normalize is False and text.lexicon.apply("Hbf") == "Hauptbahnhof"

    path.write_text("patterns: {'(broken': x}", encoding="utf-8")
    working = text.lexicon
    carry_changes(fresh, fresh, playback, voice, text, SPEAKERS)
    assert text.lexicon is working


def test_read_settings_reads_the_file_again_and_keeps_the_old_ones_when_it_does_not_load(tmp_path, caplog):
    current = settings()
    assert read_settings(None, current) is current  # run without a file: nothing to read
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(json.dumps({"audio": {"volume": 0.4}}))
    assert read_settings(config, current).audio.volume == 0.4

    config.write_text(json.dumps({"audio": {"volume": "loud"}}))
    with caplog.at_level(logging.ERROR):
        assert read_settings(config, current) is None
    assert "keeping the old settings" in caplog.text and "audio.volume" in caplog.text
