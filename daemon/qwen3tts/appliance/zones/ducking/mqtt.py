"""Ducking over MQTT: a `duck` and an `unduck` message on the zone's configured topic (docs/mqtt.md).

For Home Assistant or Music Assistant to lower a media player (the message: mqtt/duck.py): `duck` when
the announcement is about to start (the chime waits `ramp_ms`), `unduck` at the start of the ramp out,
after its last sample was heard or it was cut. The listener ramps by itself; this backend has no steps.

A duck is recorded (announcement id) before the message goes out, so a crash of ours between the two
messages leaves the record behind and the next start sends the `unduck` it owes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from qwen3tts.appliance.zones.ducking.zone_ducking import DuckError
from qwen3tts.appliance.zones.restore import RestoreRecord

Publish = Callable[..., bool]
"""publish(topic_name=, action=, zone=, id=, level_db=, ramp_ms=): hands the message (mqtt/duck.py) to
the MQTT client (the service wires it); False when there is no client (yet) to take it."""


class MqttDuck:
    """The `DuckBackend` that tells others to duck."""

    def __init__(self, zone: str, topic: str, publish: Publish, restore_dir: Path) -> None:
        self.zone, self.topic = zone, topic
        self.name = f"mqtt:{topic}"
        self._publish = publish
        self.record = RestoreRecord(restore_dir, f"{zone}.duck-mqtt")
        self._current = ""

    def lower(self, announcement: str, level_db: float, ramp_ms: int) -> None:
        self.record.remember({announcement: "duck"})
        if not self._notice("duck", announcement, level_db, ramp_ms):
            self.record.forget([announcement])  # never sent: no unduck is owed
            raise DuckError(f"no MQTT connection to send duck on {self.topic}")
        self._current = announcement

    def step(self, db: float) -> None:
        """The listener ramps itself."""

    def raise_back(self, announcement: str, ramp_ms: int) -> None:
        self._send("unduck", self._current or announcement, 0.0, ramp_ms)

    def hand_over(self, previous: str, announcement: str, level_db: float) -> None:
        self.record.remember({announcement: "duck"})
        self._current = announcement
        self._send("unduck", previous, 0.0, 0)
        self.record.forget([previous])
        self._send("duck", announcement, level_db, 0)

    def restored(self) -> None:
        self.record.forget([self._current])
        self._current = ""

    def recover(self) -> bool:
        """Send the `unduck` a crash of ours owes; False (tried again later) while MQTT is not up yet."""
        for announcement in self.record.pending():
            if not self._notice("unduck", announcement, 0.0, 0):
                return False
            self.record.forget([announcement])
        return True

    def _send(self, action: str, announcement: str, level_db: float, ramp_ms: int) -> None:
        if not self._notice(action, announcement, level_db, ramp_ms):
            raise DuckError(f"no MQTT connection to send {action} on {self.topic}")

    def _notice(self, action: str, announcement: str, level_db: float, ramp_ms: int) -> bool:
        return self._publish(topic_name=self.topic, action=action, zone=self.zone, id=announcement,
                             level_db=float(level_db), ramp_ms=int(ramp_ms))  # fmt: skip
