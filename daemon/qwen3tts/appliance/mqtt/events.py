"""Typed MQTT messages the appliance publishes: availability, status, events, voices, discovery.

Same contract as `messages.py` (topic relative to the base topic, payload bytes, `from_mqtt`
round trip); split off so each file stays one screenful of concepts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from qwen3tts.appliance.mqtt.messages import Message, MqttMeta
from qwen3tts.appliance.mqtt.payload import decode_json_object, decode_text, encode_json


@dataclass(frozen=True)
class Availability(Message):
    """Retained `<base>/availability`: online / offline (also the last will)."""

    SUFFIX: ClassVar[str] = "availability"
    retain: ClassVar[bool] = True

    online: bool

    def payload(self) -> bytes:
        return b"online" if self.online else b"offline"

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Availability:
        return cls(online=payload == b"online")


@dataclass(frozen=True)
class Status(Message):
    """Retained JSON `<base>/status`: what the appliance is doing (also HA's sensor state)."""

    SUFFIX: ClassVar[str] = "status"
    retain: ClassVar[bool] = True

    state: str = "idle"
    """idle | speaking | stopping | no_bundle (waiting for a bundle: `problem` says what to do)."""
    queue_depth: int = 0
    current_id: str | None = None
    batch_limit: int = 0
    thermal_level: str = "cool"
    temperature_c: float | None = None
    volume: float = 1.0
    voice: str = ""
    device_plan: dict[str, str] = field(default_factory=dict)
    decode_paths: dict[str, str] = field(default_factory=dict)
    """How each decode stage runs: talker and code_predictor, each "plugin" (the OpenVINO plugin's graph),
    "plugin+op <kernel set>" (that graph with its INT8 MatMuls on the native op) or "fused native <kernel
    set>" (one native call per frame, runtime/native_decode/)."""
    bundle: str = ""
    weights: str = ""
    """release, or random (qwen3tts tiny) for a bundle built from a random checkpoint."""
    engine: dict[str, float] = field(default_factory=dict)
    """Live engine figures: running, waiting, max_batch, mean_batch (requests per decode step over
    the last minute) and frames_per_second, so an operator can see it batch; prefix_cached_blocks,
    prefix_queried_tokens and prefix_hit_tokens (since start) show how much prompt prefill the KV
    prefix cache saves (a registered voice's prompt prefix is shared between its requests)."""
    cached: bool = False
    """The current announcement plays from the phrase cache."""
    cache: dict[str, int] = field(default_factory=dict)
    """Phrase cache figures: entries, bytes, max_bytes, hits, misses, evictions (empty when off)."""
    problem: str = ""
    """Why the appliance cannot speak and what fixes it (empty when it can)."""
    pool: dict[str, object] = field(default_factory=dict)
    """The synthesis pool this box is a member of: group, state (taking | holding | behind), round_robin,
    anchor; empty when it is in none."""
    version: str = ""
    """The qwen3tts version the box runs."""

    def payload(self) -> bytes:
        return encode_json({k: v for k, v in asdict(self).items() if k != "problem" or v})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Status:
        obj = decode_json_object(decode_text(payload))
        return cls(**{k: obj[k] for k in cls.__dataclass_fields__ if k in obj})


@dataclass(frozen=True)
class Event(Message):
    """Non-retained `<base>/event`: one step in an announcement's life, or the answer to a command.

    `event` is one of messages.EVENTS (queued ... rejected, error) or messages.ANSWERS (stopped,
    not_found, volume_set, voice_set); the optional fields say what a command did.
    """

    SUFFIX: ClassVar[str] = "event"

    event: str
    id: str | None = None
    reason: str = ""
    t_event: float = 0.0
    t_queued: float | None = None
    t_started: float | None = None
    t_first_audio: float | None = None
    t_finished: float | None = None
    cached: bool | None = None
    """started / first_audio / finished: True when the audio came from the phrase cache (no synthesis)."""
    zones: tuple[str, ...] = ()
    """queued: the zones it addresses (none named: an all-call); started: the zones it plays in;
    finished: those it played in; queued again / cancelled after a cut: those it was cut in; error:
    those it failed in."""
    zone: str | None = None
    """error: the one zone whose output failed while the others play on (the announcement goes on)."""
    warnings: tuple[str, ...] = ()
    """Why part of an accepted request was ignored (an instruct the bundle cannot use, a response topic)."""
    scope: str | None = None
    """stopped / not_found: the stop scope."""
    cancelled: tuple[str, ...] = ()
    """stopped: ids of the waiting announcements it cancelled."""
    volume: float | None = None
    """volume_set: the volume now in effect."""
    voice: str | None = None
    """voice_set: the default voice now in effect."""
    correlation_data: bytes | None = None

    def payload(self) -> bytes:
        body = {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()
            if v is not None and v != () and k != "correlation_data"
        }
        return encode_json(body)

    def meta(self) -> MqttMeta:
        return MqttMeta(correlation_data=self.correlation_data)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Event:
        obj = decode_json_object(decode_text(payload))
        known = {k: obj[k] for k in cls.__dataclass_fields__ if k in obj and k != "correlation_data"}
        for name in ("warnings", "cancelled", "zones"):
            if name in known:
                known[name] = tuple(known[name])
        return cls(**known, correlation_data=(meta or MqttMeta()).correlation_data)


@dataclass(frozen=True)
class Reply(Message):
    """An event copied to the MQTT 5 response topic the request named, with its correlation data."""

    response_topic: str
    event: Event

    def topic(self, base: str) -> str:
        return self.response_topic

    def payload(self) -> bytes:
        return self.event.payload()

    def meta(self) -> MqttMeta:
        return MqttMeta(correlation_data=self.event.correlation_data)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Reply:
        return cls(response_topic=topic, event=Event.from_mqtt(topic, payload, meta))


@dataclass(frozen=True)
class Voices(Message):
    """Retained `<base>/voices`: the voices and languages the loaded bundle offers."""

    SUFFIX: ClassVar[str] = "voices"
    retain: ClassVar[bool] = True

    voices: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()

    def payload(self) -> bytes:
        return encode_json({"voices": list(self.voices), "languages": list(self.languages)})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Voices:
        obj = decode_json_object(decode_text(payload))
        return cls(voices=tuple(obj.get("voices", ())), languages=tuple(obj.get("languages", ())))


@dataclass(frozen=True)
class DiscoveryConfig(Message):
    """Retained Home Assistant discovery config `<prefix>/<component>/<node_id>/<object_id>/config`."""

    retain: ClassVar[bool] = True

    component: str
    node_id: str
    object_id: str
    config: dict[str, Any]
    discovery_prefix: str = "homeassistant"

    def topic(self, base: str) -> str:
        return f"{self.discovery_prefix}/{self.component}/{self.node_id}/{self.object_id}/config"

    def payload(self) -> bytes:
        return encode_json(self.config) if self.config else b""  # empty: Home Assistant removes the entity

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> DiscoveryConfig:
        prefix, component, node_id, object_id, _config = topic.rsplit("/", 4)
        config = decode_json_object(decode_text(payload)) if payload else {}
        return cls(component, node_id, object_id, config, prefix)
