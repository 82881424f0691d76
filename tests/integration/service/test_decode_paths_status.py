"""The daemon says which path each decode stage runs: the ready line, the retained MQTT status and the status
page's JSON, with `devices.native_kernels` always (the talker's graph with the native op, the code predictor
as the fused native frame) and never (the plugin's graphs), in process on the tiny INT8 bundle."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from mosquitto_broker import free_port

from qwen3tts.runtime.native import load_library
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "paths"


@pytest.fixture(params=["always", "never"])
def daemon(request, tmp_path, mosquitto, tiny_models, recorder_factory, caplog):
    port = free_port()
    config = tmp_path / "qwen3tts.yaml"
    sections = {
        "model": {"bundle": str(tiny_models.bundle(weights="int8"))},
        # the op on the plugin's talker under always (not the native talker, which auto may take)
        "devices": {
            "talker": ["CPU"],
            "codec": ["CPU"],
            "native_kernels": request.param,
            "native_talker": "never",
        },
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav")},
        "thermal": {"enabled": False},
        "cache": {"enabled": False},
        "servers": {"http": {"enabled": True, "port": port}},
    }
    config.write_text(json.dumps(sections))
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/status"])
    service = Service(load_settings(config), config_path=config)
    with caplog.at_level(logging.INFO, logger="qwen3tts.service"):
        service.start()
    yield request.param, service, recorder, f"http://127.0.0.1:{port}"
    service.stop()


def _expected(mode: str) -> dict[str, str]:
    if mode == "never":
        return {"talker": "plugin", "code_predictor": "plugin"}
    isa = load_library().isa  # the kernel set this CPU runs
    return {"talker": f"plugin+op {isa}", "code_predictor": f"fused native {isa}"}


def test_the_ready_line_the_mqtt_status_and_the_status_page_name_each_decode_path(daemon, caplog):
    mode, service, recorder, url = daemon
    expected = _expected(mode)
    assert service.runtime.plan.decode_paths() == expected
    lines = [r.getMessage() for r in caplog.get_records("setup")]  # the fixture started the daemon
    ready = [line for line in lines if line.startswith("ready: ")]
    assert len(ready) == 1 and f"decode {expected}" in ready[0], ready
    status = recorder.wait_for(lambda msgs: bool(msgs), timeout=60)[-1]
    assert json.loads(status.payload)["decode_paths"] == expected
    page = httpx.get(f"{url}/status/state", timeout=30)
    assert page.status_code == 200, page.text
    assert page.json()["status"]["decode_paths"] == expected
