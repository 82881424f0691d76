"""The MQTT client: the only module that imports paho.

A narrow adapter: connect (MQTT 5, falling back to 3.1.1 when the broker refuses it), subscribe in
`on_connect` so a reconnect always resubscribes, publish typed messages, acknowledge QoS 1
messages by hand once they are spooled. paho callbacks run on paho's network thread and only turn
each message into an `Inbound` handed to `on_inbound` (the intake's `post`, which only queues it).
One thread of our own supervises paho's loop (`loop_forever`, which reconnects with backoff) and
rebuilds the client when the protocol has to be downgraded.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable
from functools import partial

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from qwen3tts.appliance.mqtt.backlog import Backlog
from qwen3tts.appliance.mqtt.connection import stable_client_id, tls_context, topics_for
from qwen3tts.appliance.mqtt.events import Availability
from qwen3tts.appliance.mqtt.messages import Inbound, Message, MqttMeta
from qwen3tts.appliance.mqtt.routing import subscriptions
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.settings import MqttSettings, read_mqtt_password

log = logging.getLogger(__name__)

UNSUPPORTED_PROTOCOL_VERSION = 0x84


class MqttClient:
    """Connects, subscribes, publishes typed messages and acknowledges QoS 1 messages by hand."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        on_inbound: Callable[[Inbound], object],
        site: str | None = None,
        password: str | None = None,
        reconnect_delay: tuple[int, int] = (1, 30),
        zones: tuple[str, ...] = (),
    ) -> None:
        self.settings = settings
        self.topics = topics_for(settings, site, zones)
        self.client_id = stable_client_id(settings, self.topics.base.rsplit("/", 1)[-1])
        self._on_inbound = on_inbound
        self._password = password if password is not None else read_mqtt_password(settings)
        self._reconnect_delay = reconnect_delay
        self.protocol = settings.protocol
        """The protocol in use: "5", or "3.1.1" after a fallback."""
        self.backlog = Backlog(settings.max_queued_messages // 4)
        """Unacknowledged QoS 1 publishes: the intake stops reading while it is high (backlog.py)."""
        self._generation = 0
        self._client = self._build()
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._stopping = False
        self._downgrade = False
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, supervisor: Supervisor | None = None) -> None:
        """Connect in the background; retries with backoff while the broker is down. The daemon gives
        its supervisor (the network loop is its worker `mqtt`); tools and tests run it on a thread."""
        if supervisor is not None:
            self._thread = supervisor.start("mqtt", self.run).thread
            return
        self._thread = threading.Thread(target=self.run, args=(threading.Event(),), name="mqtt", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Publish `offline`, disconnect cleanly and join the network thread."""
        self._stopping = True
        if self._connected.is_set():
            info = self.publish(Availability(online=False))
            try:
                if info is not None:
                    info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):  # the connection dropped meanwhile: the will says it
                log.info("could not publish offline; the broker sends the last will instead")
        self._client.disconnect()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    def run(self, stop: threading.Event) -> None:
        """paho's loop, restarted should it ever raise (it reconnects by itself otherwise); it ends
        with `stop()` (which disconnects: `stop` alone cannot interrupt paho's loop)."""
        while not (self._stopping or stop.is_set()):
            client = self._client
            try:
                self._connect(client)
                client.loop_forever(retry_first_connection=True)
            except Exception:  # supervisor loop: log, back off, keep the appliance reachable
                log.exception("MQTT network loop failed; restarting it")
                time.sleep(self._reconnect_delay[0])
                continue
            if self._downgrade and not self._stopping:
                self._downgrade = False
                self.protocol = "3.1.1"
                log.warning("broker refused MQTT 5; reconnecting with MQTT 3.1.1")
                with self._lock:
                    self._client = self._build()
            elif not self._stopping:
                log.error("MQTT loop ended unexpectedly; restarting it")

    # --- outgoing ----------------------------------------------------------------------------

    def publish(self, message: Message) -> paho.MQTTMessageInfo | None:
        """Publish a typed message; buffered (bounded) while disconnected; None if dropped."""
        meta = message.meta()
        properties = self._publish_properties(meta) if self.protocol == "5" else None
        with self._lock:
            client = self._client
        try:
            info = client.publish(
                message.topic(self.topics.base),
                message.payload(),
                qos=message.qos,
                retain=message.retain,
                properties=properties,
            )
        except (ValueError, TypeError) as exc:  # a bad topic must not kill the thread that publishes
            log.warning("dropped %s message: %s", type(message).__name__, exc)
            return None
        if info.rc not in (paho.MQTT_ERR_SUCCESS, paho.MQTT_ERR_NO_CONN):
            log.warning("dropped %s message: %s", type(message).__name__, paho.error_string(info.rc))
            return None
        if message.qos:
            self.backlog.sent(info.mid)
        return info

    def _ack(self, mid: int, qos: int, generation: int) -> None:
        """Acknowledge a received QoS 1 message (after it is safely spooled); an ack meant for a client
        that was replaced since (a protocol downgrade) is meaningless and dropped."""
        with self._lock:
            client, current = self._client, self._generation
        if generation == current:
            client.ack(mid, qos)

    @staticmethod
    def _publish_properties(meta: MqttMeta) -> Properties | None:
        if meta.correlation_data is None and meta.message_expiry is None and meta.response_topic is None:
            return None
        props = Properties(PacketTypes.PUBLISH)
        if meta.correlation_data is not None:
            props.CorrelationData = meta.correlation_data
        if meta.response_topic is not None:
            props.ResponseTopic = meta.response_topic
        if meta.message_expiry is not None:
            props.MessageExpiryInterval = meta.message_expiry
        return props

    # --- building and connecting -------------------------------------------------------------

    def _build(self) -> paho.Client:
        v5 = self.protocol == "5"
        self._generation += 1
        client = paho.Client(
            paho.CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=paho.MQTTv5 if v5 else paho.MQTTv311,
            clean_session=None if v5 else False,
            manual_ack=True,
            userdata=self._generation,
        )
        client.max_queued_messages_set(self.settings.max_queued_messages)
        client.reconnect_delay_set(*self._reconnect_delay)
        will = Availability(online=False)
        client.will_set(will.topic(self.topics.base), will.payload(), qos=will.qos, retain=will.retain)
        if self.settings.username:
            client.username_pw_set(self.settings.username, self._password)
        if self.settings.tls_ca is not None:
            client.tls_set_context(self._tls_context())
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        client.on_publish = lambda _c, _u, mid, _rc, _p: self.backlog.acked(mid)
        client.on_connect_fail = self._on_connect_fail
        return client

    def _tls_context(self) -> ssl.SSLContext:
        return tls_context(self.settings)

    def _connect(self, client: paho.Client) -> None:
        host, port, keepalive = self.settings.host, self.settings.port, self.settings.keepalive
        if self.protocol == "5":
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = self.settings.session_expiry
            props.ReceiveMaximum = self.settings.receive_maximum  # unacknowledged says in flight, at most
            client.connect_async(host, port, keepalive, clean_start=False, properties=props)
        else:
            client.connect_async(host, port, keepalive)

    # --- paho callbacks (network thread: never block, never raise) ---------------------------

    def _on_connect(self, client, generation, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            log.warning("broker refused the connection: %s", reason_code)
            if self.protocol == "5" and reason_code.value == UNSUPPORTED_PROTOCOL_VERSION:
                self._downgrade = True
                client.disconnect()
            return
        log.info(
            "connected to %s:%s as %s (MQTT %s, session present: %s)",
            self.settings.host,
            self.settings.port,
            self.client_id,
            self.protocol,
            flags.session_present,
        )
        self._subscribe(client)
        online = Availability(online=True)
        client.publish(online.topic(self.topics.base), online.payload(), qos=online.qos, retain=online.retain)

    def _on_subscribe(self, client, generation, mid, reason_codes, properties) -> None:
        refused = [str(rc) for rc in reason_codes if rc.is_failure]
        if refused:
            log.error("broker refused subscriptions: %s", ", ".join(refused))
        # Connected for our purposes only once the broker routes our topics to us.
        self._connected.set()

    def _subscribe(self, client: paho.Client) -> None:
        # MQTT 5: commands are not sent from the retained store at subscribe (retainHandling 2), and
        # Retain As Published keeps the retain flag of live messages, so the intake can refuse a
        # retained command published while we listen. MQTT 3.1.1 clears that flag on live messages:
        # there only the retained messages delivered at subscribe time carry it (docs/mqtt.md).
        if self.protocol == "5":
            subs = [
                (
                    topic,
                    SubscribeOptions(
                        qos=1, retainHandling=2 if drop_retained else 0, retainAsPublished=drop_retained
                    ),
                )
                for topic, drop_retained in subscriptions(self.topics)
            ]
        else:
            subs = [(topic, 1) for topic, _ in subscriptions(self.topics)]
        client.subscribe(subs)

    def _on_disconnect(self, client, generation, flags, reason_code, properties) -> None:
        self._connected.clear()
        if not self._stopping:
            log.warning("disconnected from the broker: %s; reconnecting", reason_code)

    def _on_connect_fail(self, client, generation) -> None:
        log.info("cannot reach the broker at %s:%s; retrying", self.settings.host, self.settings.port)

    def _on_message(self, client, generation, msg: paho.MQTTMessage) -> None:
        try:
            ack = partial(self._ack, msg.mid, msg.qos, generation) if msg.qos else None
            self._on_inbound(inbound_of(msg, msg.mid if msg.qos else None, ack))
        except Exception:  # the library's thread boundary: an exception here would kill paho's network loop
            log.exception("could not enqueue a message from %s", msg.topic)


def inbound_of(msg: paho.MQTTMessage, message_id: int | None, ack: Callable[[], None] | None) -> Inbound:
    """paho's message as ours: topic, payload, flags and the MQTT 5 properties we read (also the pool's)."""
    props = getattr(msg, "properties", None)
    return Inbound(
        msg.topic,
        bytes(msg.payload),
        retain=bool(msg.retain),
        dup=bool(msg.dup),
        response_topic=getattr(props, "ResponseTopic", None),
        correlation_data=getattr(props, "CorrelationData", None),
        message_expiry=getattr(props, "MessageExpiryInterval", None),
        message_id=message_id,
        ack=ack,
    )
