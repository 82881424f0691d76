"""Every MQTT message the service sends, through the MQTT door of the moment.

Before the door exists (start-up) and between two doors (a reload that reconnects) a message is dropped:
nothing could carry it. One that MQTT cannot carry (a payload it cannot encode, a response topic with a
wildcard) is dropped with a log line: it must not fail the worker that sent it. `rejected` and `error`
events are counted for /metrics. The last event of a spooled announcement is built before the spool
forgets it and kept until the broker has it (`owe`, owed_events.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.appliance.mqtt.duck import DuckMessage
from qwen3tts.service.mqtt_door import MqttDoor
from qwen3tts.service.owed_events import OwedEvents

log = logging.getLogger(__name__)


class Outbox:
    """Publishes through `door()`, the service's MQTT door or None; counts what /metrics reports.
    `owed` (set at start) keeps the ends of spooled announcements."""

    def __init__(self, door: Callable[[], MqttDoor | None]):
        self._door = door
        self.counts = {"rejected": 0, "error": 0}  # for /metrics; read by the servers' thread
        self.owed: OwedEvents | None = None
        self._ready: dict[tuple[str, str], list] = {}  # built by `owe`, sent by `announce` (one thread)

    def owe(self, ann, event: str, reason: str, warnings: tuple[str, ...], **zones) -> None:
        """The announcer's `on_ending`: the end's messages, built now and kept on disk before the spool
        forgets `ann`; `announce` sends these very messages."""
        door = self._door()
        if self.owed is None or door is None:
            return
        messages = announcement_events(ann, event, reason, time.time(), warnings, **zones)
        self._ready[(ann.id, event)] = self.owed.owe(ann.id, messages, door.client.topics.base)

    def announce(self, ann, event: str, reason: str, warnings: tuple[str, ...], **zones) -> None:
        """An announcer event as MQTT messages (the event, its reply, Hermes answers)."""
        ready = self._ready.pop((ann.id, event), None)
        if ready is None:
            for message in announcement_events(ann, event, reason, time.time(), warnings, **zones):
                self.publish(message)
        elif self.owed is not None:
            self.owed.sent(ann.id, [self.publish(message) for message in ready])

    def settle(self) -> None:
        if self.owed is not None:
            self.owed.settle()

    def resend(self) -> None:
        """What the last process owed: sent again, as it was (at start, once the door exists)."""
        if self.owed is not None:
            self.owed.resend(self.publish)

    def publish(self, message):
        """Publish one outbound message, or drop it with a log line (see the module docstring); paho's
        message info, or None when it was dropped."""
        kind = getattr(message, "event", None)
        if kind in ("rejected", "error"):
            self.counts[kind] += 1
        door = self._door()
        if door is None:
            return None
        try:
            return door.publish(message)
        except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
            log.warning("dropped an outbound %s: %s: %s", type(message).__name__, type(exc).__name__, exc)
            return None

    def publish_duck(self, **fields) -> bool:
        """A zone's duck / unduck message (audio thread); False while there is no MQTT client yet."""
        door = self._door()
        return door is not None and door.client.publish(DuckMessage(**fields)) is not None
