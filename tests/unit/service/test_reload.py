"""SIGHUP's settings logic (service/reload.py): what the file changed goes to the announcer's inbox, what it
did not change keeps the value set over MQTT, and a file that does not load changes nothing."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

from qwen3tts.service.reload import carry_changes, read_settings
from qwen3tts.settings import AudioSettings, Settings, TextSettings, VoiceSettings
from qwen3tts.synthesis import TextOptions

SPEAKERS = ("Ryan", "Vivian")


class Inbox:
    """Records the announcer commands a reload posts (the announcer applies them; tested there)."""

    def __init__(self):
        self.posted: list[tuple[str, object]] = []

    def set_volume(self, volume, answer=None):
        self.posted.append(("volume", volume))

    def set_muted(self, muted):
        self.posted.append(("muted", muted))

    def set_defaults(self, changes):
        self.posted.append(("defaults", changes))


def settings(
    volume=1.0, muted=False, voice="ryan", language="auto", normalize=True, lexicon=None
) -> Settings:
    return Settings(
        audio=AudioSettings(volume=volume, muted=muted),
        voice=VoiceSettings(voice=voice, language=language),
        text=TextSettings(normalize=normalize, lexicon=lexicon),
    )


def test_a_file_that_changed_neither_volume_nor_voice_posts_nothing_so_what_mqtt_set_stays():
    inbox = Inbox()
    carry_changes(settings(), settings(), inbox, TextOptions(), SPEAKERS)
    assert inbox.posted == []


def test_what_the_file_changed_is_posted_field_by_field_in_the_bundles_spelling():
    inbox, old = Inbox(), settings()
    fresh = settings(volume=0.8, muted=True, language="german")  # the voice name is not touched
    carry_changes(old, fresh, inbox, TextOptions(), SPEAKERS)
    assert inbox.posted == [("volume", 0.8), ("muted", True), ("defaults", {"language": "german"})]
    inbox.posted.clear()
    carry_changes(fresh, replace(fresh, voice=VoiceSettings(voice="VIVIAN", language="german")), inbox,
                  TextOptions(), SPEAKERS)  # fmt: skip
    assert inbox.posted == [("defaults", {"voice": "Vivian"})]


def test_text_options_follow_the_file_and_a_broken_lexicon_keeps_the_previous_one(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text("words: {Hbf: Hauptbahnhof}", encoding="utf-8")
    text, fresh = TextOptions(), settings(normalize=False, lexicon=path)
    carry_changes(settings(), fresh, Inbox(), text, SPEAKERS)
    assert text.normalize is False and text.lexicon.apply("Hbf") == "Hauptbahnhof"
    path.write_text("patterns: {'(broken': x}", encoding="utf-8")
    working = text.lexicon
    carry_changes(fresh, fresh, Inbox(), text, SPEAKERS)
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
