"""Home Assistant discovery configs: valid JSON, unique ids, wired to the appliance's real topics."""

from __future__ import annotations

import json
from collections import Counter

from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.discovery import discovery_configs, node_id_for, voice_messages
from qwen3tts.appliance.mqtt.events import Availability, DiscoveryConfig, Status, Voices
from qwen3tts.appliance.mqtt.messages import Say
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.voices.catalog import VoiceCatalog, VoiceChoice

TOPICS = Topics(base="qwen3tts/front-desk.1")


def configs():
    return discovery_configs(TOPICS, voices=("ryan", "vivian"), sw_version="0.1.0")


def test_every_payload_is_valid_json_with_a_unique_id_and_topic():
    found = configs()
    bodies = [json.loads(c.payload()) for c in found]
    ids = [b["unique_id"] for b in bodies]
    assert len(ids) == len(set(ids)) == 8
    assert len({c.topic(TOPICS.base) for c in found}) == 8
    assert all(c.retain for c in found)


def test_the_entities_are_the_agreed_set():
    kinds = Counter(c.component for c in configs())
    assert kinds == Counter(
        {"notify": 1, "button": 1, "number": 1, "select": 1, "sensor": 3, "binary_sensor": 1}
    )


def test_commands_go_to_the_appliance_topics_and_states_come_from_status():
    by_id = {c.object_id: json.loads(c.payload()) for c in configs()}
    base = TOPICS.base
    assert by_id["say"]["command_topic"] == Say.topic_for(base)
    assert by_id["stop"]["command_topic"] == Stop.topic_for(base)
    assert by_id["volume"]["command_topic"] == SetVolume.topic_for(base)
    assert by_id["voice"]["command_topic"] == SetVoice.topic_for(base)
    assert by_id["voice"]["options"] == ["ryan", "vivian"]
    for object_id in ("volume", "voice", "queue_depth", "temperature", "batch_limit", "speaking"):
        assert by_id[object_id]["state_topic"] == Status.topic_for(base)
    assert {b["availability_topic"] for b in by_id.values()} == {Availability.topic_for(base)}


def test_every_command_entity_publishes_at_qos_1_so_a_say_is_spooled_before_the_broker_forgets_it():
    commands = [json.loads(c.payload()) for c in configs() if c.config and "command_topic" in c.config]
    assert {b["unique_id"].rsplit("_", 1)[-1] for b in commands} == {"say", "stop", "volume", "voice"}
    assert {b["qos"] for b in commands} == {1}
    states = [json.loads(c.payload()) for c in configs() if c.config and "command_topic" not in c.config]
    assert states and all("qos" not in b for b in states)  # states are read at the default: nothing to keep


def test_value_templates_name_real_status_fields():
    status_fields = set(Status.__dataclass_fields__)
    for body in (json.loads(c.payload()) for c in configs()):
        if "value_template" in body:
            field = body["value_template"].split("value_json.")[1].split()[0]
            assert field in status_fields, body["value_template"]


def test_topics_follow_the_discovery_layout_with_a_safe_node_id():
    assert node_id_for(TOPICS) == "qwen3tts_front-desk_1"
    assert configs()[0].topic(TOPICS.base) == "homeassistant/notify/qwen3tts_front-desk_1/say/config"
    assert len({json.dumps(json.loads(c.payload())["device"]) for c in configs()}) == 1


def test_current_home_assistant_conventions_default_entity_id_origin_and_categories():
    by_id = {c.object_id: (c.component, json.loads(c.payload())) for c in configs()}
    for object_id, (component, body) in by_id.items():
        assert "object_id" not in body
        assert body["default_entity_id"] == f"{component}.qwen3tts_front-desk_1_{object_id}".lower()
        assert body["origin"] == {"name": "qwen3tts", "sw_version": "0.1.0"}
    categories = {oid: body.get("entity_category") for oid, (_, body) in by_id.items()}
    assert categories == {
        "say": None,
        "stop": None,
        "speaking": None,
        "volume": "config",
        "voice": "config",
        "queue_depth": "diagnostic",
        "temperature": "diagnostic",
        "batch_limit": "diagnostic",
    }


def test_a_bundle_without_preset_voices_withdraws_the_voice_select():
    found = {c.object_id: c for c in discovery_configs(TOPICS, voices=(), sw_version="0.1.0")}
    select = found["voice"]
    assert select.payload() == b"" and select.retain  # an empty retained config removes the entity
    assert select.topic(TOPICS.base) == "homeassistant/select/qwen3tts_front-desk_1/voice/config"
    assert all(json.loads(c.payload()) for oid, c in found.items() if oid != "voice")


def test_voice_messages_list_presets_then_registered_voices_and_the_languages():
    catalog = VoiceCatalog(("ryan", "vivian"), ("english", "german"))
    catalog.set_registered({"anna": VoiceChoice(ref_audio="voice:anna")}, {"anna": "digest"})
    voices, *configs = voice_messages(TOPICS, catalog, discovery=True, sw_version="0.1.0")
    assert voices == Voices(("ryan", "vivian", "anna"), ("english", "german")) and voices.retain
    assert voices.topic(TOPICS.base) == f"{TOPICS.base}/voices"
    assert all(isinstance(c, DiscoveryConfig) for c in configs) and len(configs) == 8
    (select,) = [json.loads(c.payload()) for c in configs if c.object_id == "voice"]
    assert select["options"] == ["ryan", "vivian", "anna"]  # Home Assistant's select offers the same names


def test_voice_messages_without_discovery_are_only_the_voices_topic():
    catalog = VoiceCatalog((), ("english",))
    assert voice_messages(TOPICS, catalog, discovery=False, sw_version="0.1.0") == [Voices((), ("english",))]


def test_a_box_of_several_zones_has_one_notify_entity_per_zone_on_its_zone_topic():
    zoned = Topics(base="qwen3tts/station", zone_base="qwen3tts/zone", zones=("platform-3", "Concourse.East"))
    notify = {c.object_id: c.config for c in discovery_configs(zoned) if c.component == "notify"}
    assert set(notify) == {"say", "say_zone_platform_3", "say_zone_concourse_east"}
    assert notify["say_zone_platform_3"]["command_topic"] == "qwen3tts/zone/platform-3/say"
    assert notify["say_zone_concourse_east"]["command_topic"] == "qwen3tts/zone/Concourse.East/say"
    assert notify["say_zone_concourse_east"]["name"] == "Announce in Concourse.East"
    assert notify["say_zone_platform_3"]["qos"] == 1
    one_zone = Topics(base="qwen3tts/station", zone_base="qwen3tts/zone", zones=("default",))
    assert [c.object_id for c in discovery_configs(one_zone) if c.component == "notify"] == ["say"]
