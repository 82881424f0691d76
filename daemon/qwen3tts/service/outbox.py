"""Every MQTT message the service sends, through the MQTT door of the moment.

Before the door exists (start-up) and between two doors (a reload that reconnects) a message is dropped:
nothing could carry it. One that MQTT cannot carry (a payload it cannot encode, a response topic with a
wildcard) is dropped with a log line: it must not fail the worker that sent it. `rejected` and `error`
events are counted for /metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from qwen3tts.appliance.mqtt.duck import DuckMessage
from qwen3tts.service.mqtt_door import MqttDoor

log = logging.getLogger(__name__)


class Outbox:
    """Publishes through `door()`, the service's MQTT door or None; counts what /metrics reports."""

    def __init__(self, door: Callable[[], MqttDoor | None]):
        self._door = door
        self.counts = {"rejected": 0, "error": 0}  # for /metrics; read by the servers' thread

    def publish(self, message) -> None:
        """Publish one outbound message, or drop it with a log line (see the module docstring)."""
        kind = getattr(message, "event", None)
        if kind in ("rejected", "error"):
            self.counts[kind] += 1
        door = self._door()
        if door is None:
            return
        try:
            door.publish(message)
        except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
            log.warning("dropped an outbound %s: %s: %s", type(message).__name__, type(exc).__name__, exc)

    def publish_duck(self, **fields) -> bool:
        """A zone's duck / unduck message (audio thread); False while there is no MQTT client yet."""
        door = self._door()
        return door is not None and door.client.publish(DuckMessage(**fields)) is not None
