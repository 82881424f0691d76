"""MqttClient without a broker: ids, topics, TLS errors, and how a received message becomes an Inbound."""

from __future__ import annotations

import queue
import socket

import paho.mqtt.client as paho
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from qwen3tts.appliance.mqtt.client import MqttClient
from qwen3tts.appliance.mqtt.connection import stable_client_id, topics_for
from qwen3tts.appliance.mqtt.messages import Inbound
from qwen3tts.errors import ConfigError
from qwen3tts.settings import MqttSettings


def test_client_id_is_stable_per_machine_and_site_unless_configured(tmp_path):
    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0123456789abcdef\n")
    settings = MqttSettings()
    first = stable_client_id(settings, "kitchen", machine_id)
    assert first == stable_client_id(settings, "kitchen", machine_id) and first.startswith("qwen3tts-")
    assert first != stable_client_id(settings, "hall", machine_id)
    assert stable_client_id(MqttSettings(client_id="mine"), "kitchen", machine_id) == "mine"


def test_topics_default_to_the_host_name_under_the_prefix():
    assert topics_for(MqttSettings()).base == f"qwen3tts/{socket.gethostname().split('.')[0]}"
    topics = topics_for(MqttSettings(prefix="tts", site="lobby", hermes=True, discovery_prefix="ha"))
    assert (topics.base, topics.ha_status, topics.hermes) == ("tts/lobby", "ha/status", True)


def test_unreadable_tls_files_are_config_errors_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"^mqtt\.tls_ca: cannot load"):
        MqttClient(MqttSettings(tls_ca=tmp_path / "missing.pem"), on_inbound=queue.Queue().put)


def received(mid: int, qos: int, *, dup=False, retain=False, **props) -> paho.MQTTMessage:
    """A message as paho's network thread hands it to `on_message`."""
    msg = paho.MQTTMessage(mid=mid, topic=b"qwen3tts/lobby/say")
    msg.payload, msg.qos, msg.dup, msg.retain = b"hello", qos, dup, retain
    if props:
        msg.properties = Properties(PacketTypes.PUBLISH)
        for name, value in props.items():
            setattr(msg.properties, name, value)
    return msg


@pytest.fixture
def client():
    inbound: list[Inbound] = []
    made = MqttClient(MqttSettings(site="lobby"), on_inbound=inbound.append, password="")
    made.inbound = inbound
    acks: list[tuple[int, int]] = []
    made._client.ack = lambda mid, qos: acks.append((mid, qos))  # the paho client of this generation
    made.acks = acks
    return made


def test_a_received_message_becomes_an_inbound_with_its_mqtt_facts_and_its_ack(client):
    msg = received(
        42, 1, dup=True, retain=True, ResponseTopic="r/1", CorrelationData=b"c", MessageExpiryInterval=9
    )
    client._on_message(client._client, client._generation, msg)
    (inbound,) = client.inbound
    assert (inbound.topic, inbound.payload) == ("qwen3tts/lobby/say", b"hello")
    assert (inbound.retain, inbound.dup) == (True, True)
    assert (inbound.response_topic, inbound.correlation_data, inbound.message_expiry) == ("r/1", b"c", 9)
    assert inbound.message_id == 42 and client.acks == []  # acknowledged by hand, later
    inbound.ack()
    assert client.acks == [(42, 1)]


def test_a_qos0_message_has_no_packet_id_and_nothing_to_acknowledge(client):
    client._on_message(client._client, client._generation, received(0, 0))
    (inbound,) = client.inbound
    assert (inbound.message_id, inbound.ack, inbound.dup) == (None, None, False)


def test_an_ack_meant_for_a_replaced_client_is_dropped(client):
    client._on_message(client._client, client._generation, received(7, 1))
    client._generation += 1  # a protocol downgrade built a new paho client meanwhile
    client.inbound[0].ack()
    assert client.acks == []


def test_a_failing_handler_never_raises_into_pahos_network_thread(client, caplog):
    def broken(inbound):
        raise RuntimeError("queue on fire")

    client._on_inbound = broken
    client._on_message(client._client, client._generation, received(1, 1))
    assert "could not enqueue a message" in caplog.text


def test_connect_carries_the_configured_receive_maximum_and_session_expiry():
    """What the broker is told in CONNECT, read off the wire by a listening socket in the broker's place."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(30)
        settings = MqttSettings(port=server.getsockname()[1], receive_maximum=7, session_expiry=120)
        client = MqttClient(settings, on_inbound=queue.Queue().put, site="lobby")
        client.start()
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(30)
                packet = read_packet(conn)
        finally:
            client.stop(timeout=5)
    assert packet[0] == 0x10  # CONNECT
    variable = packet[1:]
    assert variable[:7] == b"\x00\x04MQTT\x05"  # MQTT 5
    props = Properties(PacketTypes.CONNECT)
    props.unpack(variable[10:])  # after protocol name, level, flags and keepalive
    assert props.ReceiveMaximum == 7 and props.SessionExpiryInterval == 120


def read_packet(conn: socket.socket) -> bytes:
    """One MQTT packet: its type byte and its body (the remaining-length prefix dropped)."""
    first = conn.recv(1)
    length, shift = 0, 0
    while True:
        byte = conn.recv(1)[0]
        length += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    body = b""
    while len(body) < length:
        body += conn.recv(length - len(body))
    return first + body
