"""What the status page (servers/status_page.py) reads of the running appliance and may ask of it.

Called on the servers' thread: everything here reads what other threads publish (the status read-out, the
queue's ids, the recent events) or hands over, like the MQTT intake does: a text from the page is admitted
by the same policy and given to the announcer's inbox.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from qwen3tts.appliance.mqtt.messages import Say


class Console:
    """The servers' `console`: `console_status()`, `recent_events()`, `announce()`."""

    def __init__(self, service):
        self.service = service

    def console_status(self) -> dict:
        service = self.service
        current = service.announcer.current
        ann = current.ann if current is not None else None
        playing = ann and {"id": ann.id, "text": ann.text, "priority": ann.priority.label}
        queue = service.announcer.queue.ids()
        return {**asdict(service.status()), "queue": queue, "current": playing or None}

    def recent_events(self) -> list[dict]:
        return self.service.events.list()

    def announce(self, text: str, voice: str | None, priority) -> str:
        """A text from the page, checked as any `say` is, then queued like one."""
        service = self.service
        ann = service.mqtt.intake.policy.admit(Say(text=text, voice=voice, priority=priority), time.time())
        service.announcer.enqueue(ann)
        return ann.id
