"""`qwen3tts doctor` names the broker settings that drop acknowledged announcements (issue 37 item 5).

A real mosquitto with a queue of 5 messages per session: a QoS 1 session that is away while 20 messages
arrive for it loses 15 in the broker, each acknowledged to its publisher. The doctor sees the drops in
$SYS/broker/publish/messages/dropped and the limit in the broker's configuration file; what it cannot see
(a broker without that topic, no configuration file) it says it cannot tell.
"""

from __future__ import annotations

import threading
import time

import paho.mqtt.client as paho
import pytest
from mosquitto_broker import Mosquitto

from qwen3tts.doctor.broker_queue import broker_queue_checks, read_mosquitto_config
from qwen3tts.settings_loader import load_settings


@pytest.fixture
def small_queue_broker(tmp_path):
    broker = Mosquitto(tmp_path, persistence=False, extra_config=("max_queued_messages 5", "sys_interval 1"))
    broker.start()
    yield broker
    broker.stop()


def checks_for(broker: Mosquitto, config=None) -> dict:
    mqtt = load_settings(None, [f"mqtt.port={broker.port}"]).mqtt
    return {c.name: c for c in broker_queue_checks(mqtt, config, timeout=5.0)}


def away_session_misses(broker: Mosquitto, count: int) -> None:
    """A persistent QoS 1 session subscribes and goes away; `count` QoS 1 messages are published for it,
    each acknowledged by the broker to the publisher."""
    subscribed = threading.Event()
    away = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="away", clean_session=False)
    away.on_subscribe = lambda *_: subscribed.set()
    away.connect(broker.host, broker.port)
    away.loop_start()
    away.subscribe("drops/#", qos=1)
    assert subscribed.wait(5)
    away.disconnect()
    away.loop_stop()
    publisher = paho.Client(paho.CallbackAPIVersion.VERSION2)
    publisher.connect(broker.host, broker.port)
    publisher.loop_start()
    for n in range(count):
        publisher.publish("drops/x", f"message {n}", qos=1).wait_for_publish(5)
    publisher.disconnect()
    publisher.loop_stop()


def test_the_doctor_shows_what_a_small_broker_queue_dropped_and_the_setting_to_change(small_queue_broker):
    before = checks_for(small_queue_broker, small_queue_broker.config)
    assert before["broker drops"].ok, before["broker drops"].detail
    limits = before["broker queue"]
    assert (
        not limits.ok
        and "max_queued_messages 5" in limits.detail
        and "max_queued_messages 10000" in limits.fix
    )
    away_session_misses(small_queue_broker, 20)
    deadline = time.monotonic() + 30  # $SYS is refreshed every sys_interval (1 s here)
    while (drops := checks_for(small_queue_broker)["broker drops"]).ok and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not drops.ok and not drops.needed
    assert "dropped 15 messages" in drops.detail, drops.detail
    assert "max_queued_messages" in drops.fix and "docs/operations.md" in drops.fix


def test_a_broker_that_keeps_a_flood_passes(tmp_path):
    broker = Mosquitto(tmp_path, persistence=False, extra_config=("max_queued_messages 20000",))
    broker.start()
    try:
        checks = checks_for(broker, broker.config)
    finally:
        broker.stop()
    assert checks["broker drops"].ok and "dropped no message" in checks["broker drops"].detail
    assert checks["broker queue"].ok and "max_queued_messages 20000" in checks["broker queue"].detail


def test_the_config_reader_follows_include_dir_and_knows_mosquittos_default(tmp_path):
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    main = tmp_path / "mosquitto.conf"
    main.write_text(f"# comment\npersistence true\ninclude_dir {conf_d}\n")
    assert read_mosquitto_config(main) == {"persistence": "true"}
    (conf_d / "limits.conf").write_text("max_queued_messages 0\n")
    assert read_mosquitto_config(main)["max_queued_messages"] == "0"
    from qwen3tts.doctor.broker_queue import _limits_check

    assert _limits_check(main).ok and "no bound" in _limits_check(main).detail
    (conf_d / "limits.conf").write_text("max_queued_bytes 65536\n")
    unbounded_default = _limits_check(main)  # no max_queued_messages: mosquitto's 1000
    assert not unbounded_default.ok
    assert "max_queued_messages 1000 (mosquitto's default)" in unbounded_default.detail
    assert "max_queued_bytes 65536" in unbounded_default.detail
    missing = _limits_check(tmp_path / "absent.conf")
    assert not missing.ok and "cannot read" in missing.detail
