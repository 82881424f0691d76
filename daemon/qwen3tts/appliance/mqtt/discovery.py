"""Home Assistant MQTT discovery: pure functions from the appliance's topics to config messages.

One device per appliance with: a notify entity whose `notify.send_message` publishes to `say`,
on a box of several zones one more notify entity per zone publishing to its zone topic (docs/mqtt.md
says why not a select), a stop button, a volume number, a voice select, sensors for queue depth,
temperature and batch limit, and a `speaking` binary sensor. Sensor states come from the retained
`status` JSON.
The service publishes `discovery_configs(...)` at start and again whenever Home Assistant's
`homeassistant/status` says `online` (wire it as `Intake(discovery=...)`; the intake throttles
repeated births). `voice_messages()` is what announces the voice list: the retained `voices` topic and,
with discovery on, the configs (the voice select offers every voice).

Current Home Assistant conventions: `default_entity_id` (`<component>.<node>_<object>`) instead of
the deprecated `object_id`, an `origin` block naming this software, `entity_category` `config` for
settings and `diagnostic` for internals. A Base or VoiceDesign bundle has no preset voices: the
voice select is then withdrawn (an empty retained config removes it) instead of offering a
`default` the daemon would ignore; with presets its options are exactly the bundle's speakers, the
names `voice/set` accepts and `status.voice` reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.events import Availability, DiscoveryConfig, Status, Voices
from qwen3tts.appliance.mqtt.messages import Message, Say
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.voices.catalog import VoiceCatalog

COMMAND_QOS = 1
"""What Home Assistant publishes commands with: at QoS 1 the broker keeps a say until we acknowledge it,
which we do only once it is spooled."""


def node_id_for(topics: Topics) -> str:
    """A discovery node id from the base topic (`qwen3tts/kitchen` -> `qwen3tts_kitchen`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", topics.base)


def device_block(topics: Topics, *, name: str, sw_version: str, model: str) -> dict[str, Any]:
    return {
        "identifiers": [node_id_for(topics)],
        "name": name,
        "manufacturer": "qwen3tts",
        "model": model,
        "sw_version": sw_version,
    }


def origin_block(sw_version: str) -> dict[str, Any]:
    """Who published the discovery config (Home Assistant logs it with each discovered entity)."""
    return {"name": "qwen3tts", "sw_version": sw_version} if sw_version else {"name": "qwen3tts"}


def discovery_configs(
    topics: Topics,
    *,
    voices: Sequence[str] = (),
    name: str = "",
    sw_version: str = "",
    model: str = "Qwen3-TTS voice appliance",
) -> list[DiscoveryConfig]:
    """Every entity config for this appliance, retained, with unique ids."""
    base = topics.base
    common = {
        "availability_topic": Availability.topic_for(base),
        "device": device_block(
            topics, name=name or base.rsplit("/", 1)[-1], sw_version=sw_version, model=model
        ),
        "origin": origin_block(sw_version),
    }
    entity = partial(_entity, topics, common)
    return [*_controls(entity, topics, voices), *_sensors(entity, Status.topic_for(base))]


def _entity(
    topics: Topics, common: dict[str, Any], component: str, object_id: str, title: str, **fields: Any
) -> DiscoveryConfig:
    node = node_id_for(topics)
    config = {
        "name": title,
        "unique_id": f"{node}_{object_id}",
        "default_entity_id": f"{component}.{node}_{object_id}".lower(),
    }
    config.update(common, **fields)
    if "command_topic" in config:  # Home Assistant publishes at QoS 0 unless told: spooled-before-ack needs 1
        config["qos"] = COMMAND_QOS
    return DiscoveryConfig(component, node, object_id, config, topics.discovery_prefix)


def _controls(
    entity: Callable[..., DiscoveryConfig], topics: Topics, voices: Sequence[str]
) -> list[DiscoveryConfig]:
    """What Home Assistant sends: announce, stop, volume and the voice select."""
    base, status = topics.base, Status.topic_for(topics.base)
    voice_select = (
        entity(
            "select",
            "voice",
            "Voice",
            command_topic=SetVoice.topic_for(base),
            state_topic=status,
            value_template="{{ value_json.voice }}",
            options=list(voices),
            entity_category="config",
        )
        if voices
        else DiscoveryConfig(
            "select", node_id_for(topics), "voice", {}, topics.discovery_prefix
        )  # withdraws it
    )
    return [
        entity("notify", "say", "Announce", command_topic=Say.topic_for(base)),
        *_zone_notifiers(entity, topics),
        entity("button", "stop", "Stop", command_topic=Stop.topic_for(base), payload_press='{"scope":"all"}'),
        entity(
            "number",
            "volume",
            "Volume",
            command_topic=SetVolume.topic_for(base),
            state_topic=status,
            value_template="{{ value_json.volume }}",
            min=0.0,
            max=1.0,
            step=0.05,
            mode="slider",
            entity_category="config",
        ),
        voice_select,
    ]


def _zone_notifiers(entity: Callable[..., DiscoveryConfig], topics: Topics) -> list[DiscoveryConfig]:
    """`Announce in <zone>` for each zone of a box with several (with one, `Announce` is that zone)."""
    if len(topics.zones) < 2:
        return []
    return [
        entity(
            "notify",
            f"say_zone_{_entity_part(zone)}",
            f"Announce in {zone}",
            command_topic=topics.zone_say(zone),
        )
        for zone in topics.zones
    ]


def _entity_part(zone: str) -> str:
    """A zone name as part of an object and entity id (Home Assistant allows a-z 0-9 _ there)."""
    return re.sub(r"[^a-z0-9_]", "_", zone.lower())


def _sensors(entity: Callable[..., DiscoveryConfig], status: str) -> list[DiscoveryConfig]:
    """What Home Assistant reads from the retained status: queue depth, temperature, batch limit, speaking."""
    return [
        entity(
            "sensor",
            "queue_depth",
            "Queue depth",
            state_topic=status,
            value_template="{{ value_json.queue_depth }}",
            state_class="measurement",
            entity_category="diagnostic",
        ),
        entity(
            "sensor",
            "temperature",
            "Temperature",
            state_topic=status,
            value_template="{{ value_json.temperature_c }}",
            device_class="temperature",
            unit_of_measurement="°C",
            state_class="measurement",
            entity_category="diagnostic",
        ),
        entity(
            "sensor",
            "batch_limit",
            "Batch limit",
            state_topic=status,
            value_template="{{ value_json.batch_limit }}",
            entity_category="diagnostic",
        ),
        entity(
            "binary_sensor",
            "speaking",
            "Speaking",
            state_topic=status,
            value_template="{{ 'ON' if value_json.state == 'speaking' else 'OFF' }}",
        ),
    ]


def voice_messages(
    topics: Topics, catalog: VoiceCatalog, *, discovery: bool, sw_version: str
) -> list[Message]:
    """The retained `voices` message, and the discovery configs when discovery is on."""
    voices = Voices(voices=catalog.names, languages=catalog.languages)
    configs = discovery_configs(topics, voices=catalog.names, sw_version=sw_version) if discovery else []
    return [voices, *configs]
