"""The rescue of a dead pool member's session (paho): what the broker pinned to it goes to a live member.

mosquitto never moves a message assigned to one member of a shared subscription to another (measured:
docs/operations.md), and a dead member with a persistent session keeps its place in the round robin. So
the anchor (pool.py) connects once with the dead member's pool client id (clean start off: the session
and what waits in it are handed over, in-flight messages again with DUP), unsubscribes that session from
the round robin, hands every message over like a pooled one (acknowledged once spooled) and ends the
session (session expiry 0 on DISCONNECT) once all were acknowledged and nothing more came. If the owner
comes back meanwhile, the broker gives it the session again (taking it from us): what we had not
acknowledged stays there for it, and we never reconnect. What the broker flagged as redelivered may
also be in the owner's spool (it died before its acknowledgement reached the broker): each one taken is
noted (`took`, before its acknowledgement) for the `rescued` record, which tells the owner to drop it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from qwen3tts.appliance.mqtt.messages import Inbound
from qwen3tts.appliance.mqtt.pool import MemberRecord, PoolTopics
from qwen3tts.appliance.mqtt.pool_link import (
    POOL_PACKET_BASE,
    connect_properties,
    pool_client,
    pooled_inbound,
)
from qwen3tts.settings import MqttSettings, read_mqtt_password

log = logging.getLogger(__name__)

RESCUE_QUIET_S = 1.0
"""A rescue ends once everything was acknowledged and nothing more came for this long."""


class Rescue:
    """One takeover of a dead member's pool session; `on_end(record, outcome, taken)` when it is over:
    "rescued" (the session ended empty), "empty" (nothing waited), "interrupted" (the owner came back, or
    the connection failed: what was not acknowledged stays in the session), "timeout"; `taken` the
    fingerprints noted by `took`."""

    def __init__(self, settings: MqttSettings, topics: PoolTopics, record: MemberRecord, *,
                 on_inbound: Callable[[Inbound, Rescue], object],
                 on_end: Callable[[MemberRecord, str, tuple[str, ...]], object],
                 before: Callable[[float], bool] = lambda timeout: True,
                 password: str | None = None, deadline_s: float = 600.0):  # fmt: skip
        self.settings, self.topics, self.record = settings, topics, record
        self._on_inbound, self._on_end, self._before = on_inbound, on_end, before
        self._password = password if password is not None else read_mqtt_password(settings)
        self._deadline_s = deadline_s
        self._cond = threading.Condition()
        self._pending: set[int] = set()
        self._received = 0
        self._taken: list[str] = []
        self._last = time.monotonic()
        self._unsubscribed = False
        self._outcome: str | None = None

    @property
    def outcome(self) -> str | None:
        """None while the rescue runs; a rescued message still unhandled after an interrupted rescue is
        dropped (unacknowledged, it went back to the session)."""
        with self._cond:
            return self._outcome

    def start(self) -> None:
        threading.Thread(target=self._run, name=f"rescue-{self.record.site[:20]}", daemon=True).start()

    def _run(self) -> None:
        if not self._before(10.0):  # our own shared subscription first: the group must never have no member
            log.warning("pool: not in the round robin ourselves; %s is not rescued now", self.record.site)
            self._end("interrupted")
            self._on_end(self.record, "interrupted", ())
            return
        try:
            client = pool_client(self.settings, self.record.client_id, self._password)
            client.on_connect, client.on_message = self._on_connect, self._on_message
            client.on_unsubscribe, client.on_disconnect = self._on_unsubscribe, self._on_disconnect
            s = self.settings
            client.connect(s.host, s.port, s.keepalive, clean_start=False, properties=connect_properties(s))
            self._client = client
            client.loop_start()
            outcome = self._wait()
            self._end(outcome)
            if outcome in ("rescued", "empty", "timeout"):
                props = Properties(PacketTypes.DISCONNECT)
                props.SessionExpiryInterval = 0 if outcome != "timeout" else s.session_expiry
                client.disconnect(properties=props)
            client.loop_stop()
        except OSError as exc:
            log.warning("pool: cannot rescue %s: %s", self.record.site, exc)
            outcome = "interrupted"
        log.info("pool: rescue of %s: %s, %d announcements taken over", self.record.site, outcome,
                 self._received)  # fmt: skip
        self._on_end(self.record, outcome, self.taken)

    def took(self, fingerprint: str) -> None:
        """A redelivered message was spooled here (called before it is acknowledged)."""
        with self._cond:
            self._taken.append(fingerprint)

    @property
    def taken(self) -> tuple[str, ...]:
        with self._cond:
            return tuple(self._taken)

    def _wait(self) -> str:
        deadline = time.monotonic() + self._deadline_s
        with self._cond:
            while self._outcome is None:
                now = time.monotonic()
                if now >= deadline:
                    return "timeout"
                if self._unsubscribed and not self._pending and now - self._last >= RESCUE_QUIET_S:
                    return "rescued"
                self._cond.wait(0.1)
            return self._outcome

    def _end(self, outcome: str) -> None:
        with self._cond:
            if self._outcome is None:
                self._outcome = outcome
            self._cond.notify_all()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._end("interrupted")
        elif not flags.session_present:
            self._end("empty")
        else:
            client.unsubscribe(self.topics.shared)

    def _on_unsubscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        with self._cond:
            self._unsubscribed = True
            self._last = time.monotonic()  # what was queued behind the in-flight ones still comes

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self._end("interrupted")  # our own disconnect comes after the outcome is set: this is then a no-op
        client.loop_stop()  # never reconnect: the owner's return ends a rescue

    def _on_message(self, client, userdata, msg: paho.MQTTMessage) -> None:
        try:
            with self._cond:
                self._received += 1
                self._last = time.monotonic()
                if msg.qos:
                    self._pending.add(msg.mid)
            self._on_inbound(pooled_inbound(msg, 2 * POOL_PACKET_BASE, self._ack), self)
        except Exception:  # the library's thread boundary (as PoolLink._on_message)
            log.exception("pool: could not take a rescued message")

    def _ack(self, mid: int) -> None:
        with self._cond:
            self._pending.discard(mid)
            self._cond.notify_all()
        self._client.ack(mid, 1)
