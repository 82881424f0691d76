"""The voice list (appliance/voice_catalog.py): preset speakers then registered voices, in one order
everywhere; `voice/set` names resolved in any case; the list announced on the `voices` topic and in
Home Assistant's voice select."""

from __future__ import annotations

from pathlib import Path

from qwen3tts.appliance.mqtt.events import DiscoveryConfig, Voices
from qwen3tts.appliance.mqtt.messages import Topics
from qwen3tts.voices.registered import RegisteredVoices, VoiceChoice
from qwen3tts.service.voice_catalog import VoiceCatalog
from qwen3tts.settings import AnnouncementSettings, ModelSettings, Settings, VoiceSettings


class ReadableRegistry(RegisteredVoices):
    """Registered voices whose `load()` reads `on_disk` (the registry itself is tested elsewhere)."""

    def __init__(self):
        super().__init__({"anna": VoiceChoice(ref_audio="voice:anna")})
        self.on_disk = {"anna": VoiceChoice(ref_audio="voice:anna")}
        self.loads = []

    def load(self, directory, bundle_dir, prompt_builder) -> None:
        self.loads.append((directory, bundle_dir))
        self._set(dict(self.on_disk))


PROMPT_BUILDER = object()  # the catalog only hands it to the registry's load()


def catalog(prompt_builder=PROMPT_BUILDER) -> VoiceCatalog:
    return VoiceCatalog(("Ryan", "Vivian"), ("english", "german"), ReadableRegistry(), prompt_builder)


def test_names_are_the_preset_speakers_then_the_registered_voices():
    assert catalog().names == ("Ryan", "Vivian", "anna")


def test_resolve_finds_any_spelling_and_nothing_else():
    voices = catalog()
    assert voices.resolve("vivian") == "Vivian" and voices.resolve("ANNA") == "anna"
    assert voices.resolve("bob") is None
    assert voices.resolve("voice:anna") is None  # a request key is not a name


def test_load_reads_the_registry_for_the_bundle_and_says_whether_the_names_changed():
    voices = catalog()
    spool = AnnouncementSettings(spool_dir=Path("/state/spool"))
    settings = Settings(model=ModelSettings(bundle=Path("/bundles/tiny")), announcements=spool)
    assert voices.load(settings) is False  # the same voices as before
    voices.registered.on_disk["bob"] = VoiceChoice(ref_audio="voice:bob")
    assert voices.load(settings) is True and voices.names[-1] == "bob"
    assert voices.registered.loads == [(Path("/state/voices"), Path("/bundles/tiny"))] * 2


def test_without_a_prompt_builder_nothing_is_read():
    voices = catalog(prompt_builder=None)  # a runtime test double
    voices.registered.on_disk = {}
    assert voices.load(Settings()) is False and voices.registered.loads == []


def test_the_default_voice_is_the_settings_voice_in_the_bundles_spelling():
    default = catalog().default_voice(VoiceSettings(voice="vivian", language="german"))
    assert (default.voice, default.language) == ("Vivian", "german")


def test_messages_announce_every_name_on_the_voices_topic_and_in_the_ha_select():
    voices, topics = catalog(), Topics(base="qwen3tts/hall")
    only = voices.messages(topics, discovery=False)
    assert only == [Voices(voices=("Ryan", "Vivian", "anna"), languages=("english", "german"))]
    announced = voices.messages(topics, discovery=True)
    select = next(m for m in announced if isinstance(m, DiscoveryConfig) and m.object_id == "voice")
    assert select.config["options"] == ["Ryan", "Vivian", "anna"]
