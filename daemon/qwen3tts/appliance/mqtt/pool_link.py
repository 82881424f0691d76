"""The pool's MQTT connections (paho): a member's own pool session, and the rescue of a dead member's.

A connection of its own, beside the box's (client.py), because a session is what the broker pins pooled
messages to: this one holds only pooled messages, so a peer can take it over whole when the box dies
without touching the box's own commands, and its acknowledgements (held while the box is busy) never
stall the box's own topics. MQTT 5 only (shared subscriptions, Retain Handling, session expiry).

`PoolLink` keeps the member's session (`<client id>-pool`, persistent, so nothing assigned to it is
dropped): the shared subscription while it is in the round robin, the members' records, its own record
with an `offline` will. The rescue of a dead member's session is pool_rescue.py's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from qwen3tts.appliance.mqtt.client import inbound_of
from qwen3tts.appliance.mqtt.connection import tls_context
from qwen3tts.appliance.mqtt.messages import Inbound
from qwen3tts.appliance.mqtt.pool import AWAY, MEMBER, OFFLINE, MemberRecord, PoolTopics
from qwen3tts.settings import MqttSettings, read_mqtt_password

log = logging.getLogger(__name__)

POOL_PACKET_BASE = 1 << 16
"""Pooled messages' packet ids are spooled as this + the id, rescued ones as twice this + the id: each
session numbers its packets itself, and the duplicate memory must not match one session's against another."""
SPOOLED_PACKET_ID_END = 3 * POOL_PACKET_BASE
"""Past the last packet id a spooled announcement can carry (own session, pool session, rescued session)."""
OWN_RECORD_INTERVAL_S = 2.0


def pool_client(settings: MqttSettings, client_id: str, password: str | None) -> paho.Client:
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=paho.MQTTv5,
                         manual_ack=True)  # fmt: skip
    if settings.username:
        client.username_pw_set(settings.username, password)
    if settings.tls_ca is not None:
        client.tls_set_context(tls_context(settings))
    return client


def connect_properties(settings: MqttSettings) -> Properties:
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = settings.session_expiry
    props.ReceiveMaximum = settings.receive_maximum
    return props


def pooled_inbound(msg: paho.MQTTMessage, base: int, ack: Callable[[int], None]) -> Inbound:
    """A pooled message as ours; its packet id offset by `base` (see POOL_PACKET_BASE)."""
    return inbound_of(msg, base + msg.mid if msg.qos else None, partial(ack, msg.mid) if msg.qos else None)


class PoolLink:
    """A member's pool session: the shared subscription (while in the round robin), the records."""

    def __init__(self, settings: MqttSettings, topics: PoolTopics, site: str, *, client_id: str,
                 on_inbound: Callable[[Inbound], object],
                 on_record: Callable[[str, MemberRecord | None], object],
                 password: str | None = None, reconnect_delay: tuple[int, int] = (1, 30)):  # fmt: skip
        self.settings, self.topics, self.site, self.client_id = settings, topics, site, client_id
        self._on_inbound, self._on_record = on_inbound, on_record
        self._password = password if password is not None else read_mqtt_password(settings)
        self._member = True
        """Wanted in the round robin; changed by `set_member()`."""
        self.in_round_robin = threading.Event()
        """The broker confirmed the shared subscription (a SUBACK since the last connect or re-join)."""
        self._lock = threading.Lock()
        self._shared_mid: int | None = None
        self._connected = threading.Event()
        self.generation = 0
        """Counts connections lost: a pooled message received before the last loss may have gone to a
        rescuer since (it was never acknowledged), so the member drops it; the broker sends it again."""
        self._last_own_record = 0.0
        self._client = pool_client(settings, client_id, self._password)
        self._client.reconnect_delay_set(*reconnect_delay)
        will = MemberRecord(site, client_id, OFFLINE)
        self._client.will_set(topics.member(site), will.payload(), qos=1, retain=True)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message

    def start(self) -> None:
        s = self.settings
        self._client.connect_async(s.host, s.port, s.keepalive, clean_start=False,
                                   properties=connect_properties(s))  # fmt: skip
        self._client.loop_start()

    def stop(self, *, offline: bool = True, timeout: float = 5.0) -> None:
        """Disconnect, keeping the session. `offline` says so in the record first, so a peer rescues what
        waits in the session (a reload that reconnects at once does not)."""
        if offline and self._connected.is_set():
            info = self.publish_record(MemberRecord(self.site, self.client_id, OFFLINE))
            try:
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                log.info("pool: could not publish offline; the will says it")
        self._client.disconnect()
        self._client.loop_stop()

    @property
    def member(self) -> bool:
        return self._member

    def set_member(self, member: bool) -> None:
        """Join (subscribe) or leave (unsubscribe) the round robin; what was assigned before still comes."""
        with self._lock:
            if member == self._member:
                return
            self._member = member
            connected = self._connected.is_set()
        if not connected:
            return  # on_connect subscribes as wanted
        if member:
            self._subscribe_shared()
        else:
            self.in_round_robin.clear()
            self._client.unsubscribe(self.topics.shared)
        log.info("pool %s: %s the round robin", self.topics.group, "joined" if member else "left")
        self.publish_record(self._record())

    def publish_record(self, record: MemberRecord) -> paho.MQTTMessageInfo:
        return self._client.publish(self.topics.member(record.site), record.payload(), qos=1, retain=True)

    def _record(self) -> MemberRecord:
        return MemberRecord(self.site, self.client_id, MEMBER if self._member else AWAY)

    def _subscribe_shared(self) -> None:
        # Retain Handling 2 and Retain As Published, as for the box's own commands (client.py): a retained
        # pooled say is refused by the intake, never spoken.
        options = SubscribeOptions(qos=1, retainHandling=2, retainAsPublished=True)
        _rc, mid = self._client.subscribe(self.topics.shared, options=options)
        self._shared_mid = mid

    # --- paho callbacks (paho's thread: never block, never raise) ---

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            log.warning("pool: the broker refused the connection: %s", reason_code)
            return
        log.info("pool %s: connected as %s (session present: %s)", self.topics.group, self.client_id,
                 flags.session_present)  # fmt: skip
        self._connected.set()
        if flags.session_present:  # a rescue interrupted by our return left its drain topic in the session
            client.unsubscribe(self.topics.drain(self.site))
        client.subscribe(self.topics.members, options=SubscribeOptions(qos=1))
        if self._member:
            self._subscribe_shared()
        self.publish_record(self._record())

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        if mid != self._shared_mid:
            return
        if any(rc.is_failure for rc in reason_codes):
            log.error("pool: the broker refused %s: %s", self.topics.shared, reason_codes)
        else:
            self.in_round_robin.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self._connected.clear()
        self.in_round_robin.clear()
        self.generation += 1
        log.info("pool: disconnected (%s)", reason_code)

    def _on_message(self, client, userdata, msg: paho.MQTTMessage) -> None:
        try:
            site = self.topics.site_of(msg.topic)
            if site is None and msg.topic == self.topics.say:
                self._on_inbound(pooled_inbound(msg, POOL_PACKET_BASE, self._ack))
                return
            if msg.qos:
                client.ack(msg.mid, msg.qos)
            if site is None:  # a rescue's drain marker (pool_rescue.py): not a say, nothing to do
                return
            record = MemberRecord.parse(site, bytes(msg.payload))
            if site == self.site:
                self._own_record(record)
            self._on_record(site, record)
        except Exception:  # the library's thread boundary: an exception here would kill paho's loop
            log.exception("pool: could not take a message from %s", msg.topic[:80])

    def _own_record(self, record: MemberRecord | None) -> None:
        """Someone wrote our record (a rescuer, or our own last will): say again what we are."""
        mine = self._record()
        now = time.monotonic()
        if record != mine and now - self._last_own_record > OWN_RECORD_INTERVAL_S:
            self._last_own_record = now
            self.publish_record(mine)

    def _ack(self, mid: int) -> None:
        self._client.ack(mid, 1)
