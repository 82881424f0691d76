"""Typed MQTT messages: the base of every payload the appliance reads or writes, with its topic (relative
to the base topic `qwen3tts/<site>`), and `say`; each encodes its payload and decodes itself with
`from_mqtt(topic, payload, meta)`, but for a say, which validate.py reads (`read_say`: every rule a say
passes is there). The other commands are controls.py's, the events events.py's, Hermes hermes.py's.
No paho here: an `Inbound` is a received message as client.py hands it over (MQTT 5 properties, its ack),
`MqttMeta` the properties a message is published with. A parsing problem raises `RequestError` with the
reason the intake puts in a `rejected` event. Which topic carries which message is routing.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import ClassVar

from qwen3tts.appliance.mqtt.payload import encode_json
from qwen3tts.appliance.priority import ANNOUNCEMENT_LEVELS, Priority

EVENTS = ("queued", "started", "first_audio", "finished", "cancelled", "expired", "rejected", "error")
"""Events in an announcement's life."""
ANSWERS = ("stopped", "not_found", "volume_set", "voice_set")
"""Answers to commands: stop acknowledged, stop for an unknown id, volume and voice applied."""
COMMAND_MAX_BYTES = 1024
"""Size limit of stop, volume/set and voice/set payloads (say and Hermes say use the policy's)."""
CHIME_VALUES = ("default", "none", *(level.label for level in ANNOUNCEMENT_LEVELS))
"""What an announcement's `chime` may name (JSON true = default, false = none)."""


@dataclass(frozen=True)
class MqttMeta:
    """The MQTT 5 properties a message is published with (all optional)."""

    retain: bool = False
    response_topic: str | None = None
    correlation_data: bytes | None = None
    message_expiry: int | None = None  # MQTT 5 Message Expiry Interval, s


@dataclass(frozen=True)
class Inbound:
    """A message as it arrived, before parsing: topic, payload, the MQTT facts about it, its ack."""

    topic: str
    payload: bytes
    retain: bool = False
    dup: bool = False  # the broker flagged it as a redelivery (MQTT DUP)
    response_topic: str | None = None
    correlation_data: bytes | None = None
    message_expiry: int | None = None  # MQTT 5 Message Expiry Interval, s (what remains of it)
    message_id: int | None = None  # the packet id of a QoS 1 message: a redelivery carries the same one
    ack: Callable[[], object] | None = None  # acks it to the broker (QoS 1, once spooled); None: no need


class Message:
    """Base of every typed MQTT message."""

    SUFFIX: ClassVar[str] = ""
    """Topic below the base topic; absolute topics override `topic()` instead."""
    retain: ClassVar[bool] = False
    qos: ClassVar[int] = 1
    max_bytes: ClassVar[int] = COMMAND_MAX_BYTES
    """Largest inbound payload; Say and HermesSay are bounded by the policy's max_payload_bytes."""

    # `meta` in from_mqtt: anything with response_topic / correlation_data / message_expiry (an Inbound
    # as received, or an MqttMeta in a round trip).

    @classmethod
    def topic_for(cls, base: str) -> str:
        return f"{base}/{cls.SUFFIX}"

    def topic(self, base: str) -> str:
        return self.topic_for(base)

    def payload(self) -> bytes:
        raise NotImplementedError

    def meta(self) -> MqttMeta:
        """The MQTT properties to publish with (correlation data, expiry)."""
        return MqttMeta(retain=self.retain)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Message:
        raise NotImplementedError


# --- commands in ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Say(Message):
    """An announcement request on `<base>/say`: plain UTF-8 text or a JSON object (read by validate.py
    `read_say`)."""

    SUFFIX: ClassVar[str] = "say"
    max_bytes: ClassVar[int] = 0  # the policy's max_payload_bytes

    text: str
    id: str | None = None
    lang: str | None = None
    voice: str | None = None
    instruct: str | None = None
    priority: Priority = Priority.NORMAL
    volume: float | None = None
    chime: str | None = None
    repeat: int = 1
    repeat_interval: float = 0.0
    ttl: float | None = None
    expires_at: float | None = None
    """Absolute expiry, Unix time in seconds."""
    interrupt: bool | None = None
    session_id: str | None = None
    normalize: bool | None = None
    """Run the text normaliser (numbers, dates, units); None follows the setting."""
    ssml: bool | None = None  # read the text as SSML; None: when it starts with `<speak`
    seed: int | None = None
    """Sampling seed for a reproducible rendition, 0..2^32-1; None draws one."""
    cache: bool | None = None
    """May the rendition come from / go to the audio cache; None follows the setting."""
    zones: tuple[str, ...] = ()
    """The zones it is for; empty is an all-call (every zone of the box)."""
    plain: bool = False
    """The request came as plain text, not JSON (kept so the payload round-trips)."""
    response_topic: str | None = None
    correlation_data: bytes | None = None
    message_expiry: int | None = None

    def payload(self) -> bytes:
        if self.plain:
            return self.text.encode("utf-8")
        body = {k: v for k, v in asdict(self).items() if k not in _NOT_IN_SAY_JSON and v is not None}
        body["priority"] = self.priority.label
        if self.priority is Priority.NORMAL:
            del body["priority"]
        if body.get("repeat") == 1:
            del body["repeat"]
        if body.get("repeat_interval") == 0.0:
            del body["repeat_interval"]
        if "session_id" in body:
            body["sessionId"] = body.pop("session_id")
        if body.get("zones") == ():
            del body["zones"]
        elif "zones" in body:
            body["zones"] = list(body["zones"])
        return encode_json(body)

    def meta(self) -> MqttMeta:
        return MqttMeta(False, self.response_topic, self.correlation_data, self.message_expiry)


_NOT_IN_SAY_JSON = ("plain", "response_topic", "correlation_data", "message_expiry")
"""Say fields that are not payload: how it came (plain text) and its MQTT 5 properties."""


@dataclass(frozen=True)
class HomeAssistantStatus(Message):
    """`homeassistant/status`: Home Assistant's birth/will; `online` means send discovery again."""

    max_bytes: ClassVar[int] = 64

    online: bool
    discovery_prefix: str = "homeassistant"

    def topic(self, base: str) -> str:
        return f"{self.discovery_prefix}/status"

    def payload(self) -> bytes:
        return b"online" if self.online else b"offline"

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HomeAssistantStatus:
        return cls(online=payload.strip() == b"online", discovery_prefix=topic.rsplit("/", 1)[0])
