"""The `duck` / `unduck` message of a zone (zones/ducking/mqtt.py decides when; docs/mqtt.md, "Ducking").

On an absolute topic the operator configured (`zones[].ducking.mqtt_topic`), QoS 1, never retained: a
late subscriber must not duck a room for an announcement that is long over. JSON: `{"action": "duck",
"id": <announcement id>, "level_db": -20.0, "ramp_ms": 300, "zone": "shop"}`; the `unduck` has level 0.0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from qwen3tts.appliance.mqtt.messages import Message, MqttMeta
from qwen3tts.appliance.mqtt.payload import decode_json_object, decode_text, encode_json


@dataclass(frozen=True)
class DuckMessage(Message):
    """A zone's ducking message."""

    topic_name: str
    """The zone's `ducking.mqtt_topic`."""
    action: str
    """duck | unduck."""
    zone: str
    id: str
    """The announcement's id."""
    level_db: float
    """How far to lower, in dB (0 or less; 0.0 in an `unduck`: as before)."""
    ramp_ms: int
    """How long the listener should take to get there, in ms."""

    def topic(self, base: str) -> str:
        return self.topic_name

    def payload(self) -> bytes:
        fields = asdict(self)
        del fields["topic_name"]
        return encode_json(fields)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> DuckMessage:
        obj = decode_json_object(decode_text(payload))
        known = {k: obj[k] for k in cls.__dataclass_fields__ if k in obj and k != "topic_name"}
        return cls(topic_name=topic, **known)
