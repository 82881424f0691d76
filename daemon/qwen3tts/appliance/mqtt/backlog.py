"""The outgoing backlog: QoS 1 messages published and not yet acknowledged by the broker.

Under a flood every inbound message earns at least one answer, and paho drops what no longer fits its
outgoing queue (`mqtt.max_queued_messages`). So the intake stops reading while the backlog is above a
quarter of that bound: the messages it does not take stay unacknowledged. The rest of the bound covers
the answers of what was already handed over (the announcer's inbox holds at most 32 commands, each with
at most four answers). Nothing is dropped; the flood waits in front of the intake. (Measured: mosquitto
2.0.11 does not hold its in-flight limit or our Receive Maximum once acknowledgements stream, so the
bound has to be ours.)
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

MAX_EARLY = 4096
"""Acknowledgements that arrived before their publish was counted (paho's thread can be quicker than the
one publishing), and those of messages published by paho itself; bounded, oldest forgotten."""


class Backlog:
    """Counts unacknowledged QoS 1 publishes by packet id; `wait_for_room` blocks while there are too many."""

    def __init__(self, high_water: int) -> None:
        self.high_water = max(1, high_water)
        self._pending: set[int] = set()
        self._early: dict[int, None] = {}
        self._cond = threading.Condition()
        self._paused = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._pending)

    def sent(self, mid: int) -> None:
        with self._cond:
            if self._early.pop(mid, 0) is None:
                return  # its acknowledgement came first
            self._pending.add(mid)

    def acked(self, mid: int) -> None:
        """The broker acknowledged `mid` (or it will never be sent: its publish failed)."""
        with self._cond:
            if mid in self._pending:
                self._pending.discard(mid)
                self._cond.notify_all()
                return
            self._early[mid] = None
            while len(self._early) > MAX_EARLY:
                del self._early[next(iter(self._early))]

    def wait_for_room(self, timeout: float) -> bool:
        """True once the backlog is below the high-water mark; False after `timeout` (still full)."""
        with self._cond:
            room = self._cond.wait_for(lambda: len(self._pending) < self.high_water, timeout)
            if room != (not self._paused):
                self._paused = not room
                if self._paused:
                    log.warning("%d answers wait for the broker; reading paused", len(self._pending))
                else:
                    log.info("the broker took the answers; reading again")
            return room
