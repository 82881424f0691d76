"""Typed MQTT messages: the base of every payload the appliance reads or writes, with its topic (relative
to the base topic `qwen3tts/<site>`); each encodes its payload and decodes itself with
`from_mqtt(topic, payload, meta)`. A say is the exception: `Say` only names its topic, and say_reader.py
reads its payload straight into the `Announcement` it queues (every rule a say passes is there). The
other commands are controls.py's, the events events.py's, Hermes hermes.py's.
No paho here: an `Inbound` is a received message as client.py hands it over (MQTT 5 properties, its ack),
`MqttMeta` the properties a message is published with. A parsing problem raises `RequestError` with the
reason the intake puts in a `rejected` event. Which topic carries which message is routing.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from qwen3tts.appliance.priority import ANNOUNCEMENT_LEVELS

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


class Say(Message):
    """The `say` topic (`<base>/say`; a zone's `<zone_base>/<zone>/say` routes to it too) and its size
    limit: the kind the routing table (routing.py) and discovery name, and a `Rejection`'s kind. It is no
    record and is never instantiated: the door reads a say payload straight into the `Announcement` it
    queues (say_reader.py `read_say`, `admit`); `say_payload` there writes one."""

    SUFFIX: ClassVar[str] = "say"
    max_bytes: ClassVar[int] = 0  # the policy's max_payload_bytes


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
