"""The rescue of a dead pool member's session (paho): what the broker pinned to it goes to a live member.

mosquitto never moves a message assigned to one member of a shared subscription to another (measured:
docs/operations.md), and a dead member with a persistent session keeps its place in the round robin. So
the anchor (pool.py) connects once with the dead member's pool client id (clean start off: the session
and what waits in it are handed over, in-flight messages again with DUP), unsubscribes that session from
the round robin, hands every message over like a pooled one (acknowledged once spooled) and ends the
session (session expiry 0 on DISCONNECT) once all were acknowledged and its marker came. The marker is
how the rescue knows the session is empty without guessing from a quiet moment: the broker sends what
waits beyond Receive Maximum only as the in-flight messages are acknowledged, later than any fixed pause
once the box is busy spooling; so the session is also subscribed to a drain topic of its own, and after
the unsubscription the rescue publishes a nonce there. mosquitto queues a session's messages in order,
so the nonce comes after everything that waited (measured: a session holding 30 with 20 in flight,
tests/unit/appliance/mqtt/test_pool_rescue.py). If the owner
comes back meanwhile, the broker gives it the session again (taking it from us): what we had not
acknowledged stays there for it, and we never reconnect. What the broker flagged as redelivered may
also be in the owner's spool (it died before its acknowledgement reached the broker): each one taken is
noted (`took`, before its acknowledgement) for the `rescued` record, which tells the owner to drop it.
"""

from __future__ import annotations

import logging
import secrets
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
        self._drain = topics.drain(record.site)
        self._nonce = secrets.token_hex(16).encode()
        self._drain_mid: int | None = None
        self._drained = False
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
            client.on_subscribe, client.on_unsubscribe = self._on_subscribe, self._on_unsubscribe
            client.on_disconnect = self._on_disconnect
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
                if self._drained and not self._pending:
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
        else:  # the drain topic first: the marker must have a subscription to come back through
            self._drain_mid = client.subscribe(self._drain, qos=1)[1]

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        if mid != self._drain_mid:
            return
        if any(rc.is_failure for rc in reason_codes):
            log.warning("pool: the broker refused %s: %s", self._drain, reason_codes)
            self._end("interrupted")
            return
        client.unsubscribe(self.topics.shared)

    def _on_unsubscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        client.publish(self._drain, self._nonce, qos=1)  # queued behind whatever still waits

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self._end("interrupted")  # our own disconnect comes after the outcome is set: this is then a no-op
        client.loop_stop()  # never reconnect: the owner's return ends a rescue

    def _on_message(self, client, userdata, msg: paho.MQTTMessage) -> None:
        try:
            if msg.topic != self.topics.say:
                self._on_drain(client, msg)
                return
            with self._cond:
                self._received += 1
                if msg.qos:
                    self._pending.add(msg.mid)
            self._on_inbound(pooled_inbound(msg, 2 * POOL_PACKET_BASE, self._ack), self)
        except Exception:  # the library's thread boundary (as PoolLink._on_message)
            log.exception("pool: could not take a rescued message")

    def _on_drain(self, client, msg: paho.MQTTMessage) -> None:
        """Our marker: everything that waited in the session came before it. Anything else there is not
        a say (and not ours to speak): acknowledged and left."""
        if msg.qos:
            client.ack(msg.mid, msg.qos)
        if msg.topic == self._drain and bytes(msg.payload) == self._nonce:
            with self._cond:
                self._drained = True
                self._cond.notify_all()

    def _ack(self, mid: int) -> None:
        self._client.ack(mid, 1)
        with self._cond:
            self._pending.discard(mid)
            self._cond.notify_all()
