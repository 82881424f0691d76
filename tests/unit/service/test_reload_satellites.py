"""SIGHUP and Hermes satellites: they are zones made at start, so a changed list is logged and the running
one kept (the rest of the file still applies); kept satellites that clash with the new file keep it all."""

from __future__ import annotations

import json
import logging

from qwen3tts.service.reload import read_settings
from qwen3tts.settings import MqttSettings, Settings


def running(*satellites: str) -> Settings:
    return Settings(mqtt=MqttSettings(hermes=True, hermes_satellites=satellites))


def write(tmp_path, **sections):
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps(sections))
    return path


def test_a_changed_satellite_list_waits_for_the_next_start_and_the_rest_applies(tmp_path, caplog):
    path = write(tmp_path, mqtt={"hermes": True, "hermes_satellites": ["porch", "attic"], "keepalive": 60})
    with caplog.at_level(logging.WARNING):
        fresh = read_settings(path, running("porch"))
    assert fresh.mqtt.hermes_satellites == ("porch",) and fresh.mqtt.keepalive == 60
    assert "hermes_satellites changed" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        same = read_settings(path, running("porch", "attic"))
    assert same.mqtt.hermes_satellites == ("porch", "attic") and caplog.text == ""


def test_turning_hermes_off_keeps_the_running_satellites_and_their_bridge(tmp_path):
    fresh = read_settings(write(tmp_path, mqtt={"hermes": False}), running("porch"))
    assert (fresh.mqtt.hermes, fresh.mqtt.hermes_satellites) == (True, ("porch",))


def test_kept_satellites_that_clash_with_a_new_zone_keep_the_old_settings(tmp_path, caplog):
    path = write(tmp_path, zones=[{"name": "porch", "output": "null"}])
    with caplog.at_level(logging.ERROR):
        assert read_settings(path, running("porch")) is None
    assert "keeping the old settings" in caplog.text and "porch" in caplog.text
