"""The one-shot broker clients of `qwen3tts doctor` and `qwen3tts fleet` (appliance/mqtt/probe.py)
against a real mosquitto on loopback: accepted, refused for its credentials, unreachable; the retained
messages under a filter, and nothing else."""

import socket
import subprocess

import pytest
from mosquitto_broker import Mosquitto

from qwen3tts.appliance.mqtt.probe import probe_broker, read_retained
from qwen3tts.errors import BrokerError
from qwen3tts.settings import MqttSettings

PASSWORD = "s3cret-pass"


@pytest.fixture
def locked_broker(tmp_path):
    """A mosquitto that takes only user `appliance` with PASSWORD."""
    passwords = tmp_path / "passwd"
    passwords.write_text("")
    subprocess.run(["mosquitto_passwd", "-b", str(passwords), "appliance", PASSWORD], check=True, timeout=30)
    broker = Mosquitto(tmp_path, persistence=False, extra_config=(f"password_file {passwords}",))
    broker.config.write_text(
        broker.config.read_text().replace("allow_anonymous true", "allow_anonymous false")
    )
    broker.start()
    yield broker
    broker.stop()


def settings_for(broker, tmp_path, password: str | None = None) -> MqttSettings:
    if password is None:
        return MqttSettings(host=broker.host, port=broker.port)
    secret = tmp_path / "mqtt.pass"
    secret.write_text(password + "\n")
    return MqttSettings(host=broker.host, port=broker.port, username="appliance", password_file=secret)


@pytest.fixture
def closed_port():
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    yield bound.getsockname()[1]
    bound.close()


def test_a_broker_that_accepts_the_credentials_probes_clean(locked_broker, tmp_path):
    assert probe_broker(settings_for(locked_broker, tmp_path, PASSWORD), timeout=30) is None


@pytest.mark.parametrize("password", [None, "wrong"])
def test_a_broker_that_refuses_the_credentials_says_why(locked_broker, tmp_path, password):
    assert (
        probe_broker(settings_for(locked_broker, tmp_path, password), timeout=30) == "refused: Not authorized"
    )


def test_an_unreachable_broker_is_named_by_its_error(closed_port):
    answer = probe_broker(MqttSettings(host="127.0.0.1", port=closed_port), timeout=30)
    assert answer is not None and answer.startswith("ConnectionRefusedError: ")


def test_the_retained_messages_under_the_filters_are_read_and_nothing_else(
    mosquitto, recorder_factory, tmp_path
):
    publisher = recorder_factory(mosquitto, [])
    publisher.publish("qwen3tts/hall/status", b'{"state": "idle"}', retain=True)
    publisher.publish("qwen3tts/gate/status", b'{"state": "speaking"}', retain=True)
    publisher.publish("qwen3tts/gate/availability", b"online", retain=True)  # not under the filter
    publisher.publish("qwen3tts/hall/status-live", b"not retained")  # no retained copy at all
    # mosquitto sends the retained copies right behind its SUBACK; 1 s of quiet is far more than that gap
    got = read_retained(settings_for(mosquitto, tmp_path), ["qwen3tts/+/status"], quiet_s=1.0, timeout=30)
    assert sorted(got) == [
        ("qwen3tts/gate/status", b'{"state": "speaking"}'),
        ("qwen3tts/hall/status", b'{"state": "idle"}'),
    ]


def test_no_retained_message_is_an_empty_read(mosquitto, tmp_path):
    assert (
        read_retained(settings_for(mosquitto, tmp_path), ["qwen3tts/+/status"], quiet_s=0.2, timeout=30) == []
    )


def test_a_refused_read_is_a_broker_error(locked_broker, tmp_path):
    with pytest.raises(BrokerError, match=r"^the broker refused us: Not authorized$"):
        read_retained(settings_for(locked_broker, tmp_path, "wrong"), ["#"], timeout=30)


def test_an_unreachable_broker_is_a_broker_error_naming_the_address(closed_port):
    with pytest.raises(BrokerError, match=f"cannot reach the broker at 127.0.0.1:{closed_port}: "):
        read_retained(MqttSettings(host="127.0.0.1", port=closed_port), ["#"], timeout=30)
