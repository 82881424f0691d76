"""The `duck` / `unduck` message of a zone (zones/duck_mqtt.py writes its payload; docs/mqtt.md has it).

On an absolute topic the operator configured (`zones[].ducking.mqtt_topic`), QoS 1, never retained: a
late subscriber must not duck a room for an announcement that is long over.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwen3tts.appliance.mqtt.messages import Message


@dataclass(frozen=True)
class DuckMessage(Message):
    """A zone's ducking message: its topic and its JSON payload, as the zone's backend wrote them."""

    topic_name: str
    body: bytes

    def topic(self, base: str) -> str:
        return self.topic_name

    def payload(self) -> bytes:
        return self.body
