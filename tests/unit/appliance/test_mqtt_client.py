"""MqttClient configuration that needs no broker: ids, topics, TLS errors."""

from __future__ import annotations

import queue
import socket

import pytest

from qwen3tts.appliance.mqtt.client import MqttClient, stable_client_id, topics_for
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
