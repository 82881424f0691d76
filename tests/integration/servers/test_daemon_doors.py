"""The whole daemon in process on the real tiny bundle: an MQTT announcement and an HTTP request share
the engine (one engine, one policy), and the HTTP audio never reaches the appliance's own speaker."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from announcer_rig import start_subscribed
from mosquitto_broker import free_port

from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

SITE = "doors"


@pytest.fixture
def daemon(tmp_path, mosquitto, tiny_models):
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    port = free_port()
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(
        json.dumps(
            {
                "model": {"bundle": str(bundle)},
                "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
                "announcements": {"spool_dir": str(tmp_path / "spool")},
                "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav"), "lead_in_ms": 0, "tail_ms": 0},
                "thermal": {"enabled": False},
                "engine": {"max_frames": 300, "temperature": 0},  # long enough to overlap
                "cache": {"enabled": False},
                "servers": {"http": {"enabled": True, "port": port}},
            }
        )
    )
    service = Service(load_settings(config), config_path=config)
    start_subscribed(service)
    yield service, f"http://127.0.0.1:{port}", tmp_path / "wav"
    service.stop()


def test_an_mqtt_announcement_and_an_http_request_batch_in_one_engine(daemon, mosquitto, recorder_factory):
    service, url, wav_dir = daemon
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/event"])
    engine = service.runtime.engine
    # One sentence each, so a decode step with two requests can only hold both doors' requests.
    body = {"input": "Welcome to the store and have a nice day.", "voice": "vivian", "response_format": "pcm"}
    audio: list[bytes] = []
    http = threading.Thread(target=lambda: audio.append(httpx.post(f"{url}/v1/audio/speech", json=body,
                                                                   timeout=120).content))  # fmt: skip
    say = {"id": "shop", "text": "The store closes soon."}
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(say), qos=1)
    http.start()
    http.join(120)
    recorder.wait_for(lambda msgs: any(b'"finished"' in m.payload for m in msgs), 120)
    stats = engine.stats()
    assert audio and len(audio[0]) > 0
    assert stats.num_frames > stats.num_steps, stats  # some decode steps ran both requests
    assert [p.name for p in wav_dir.iterdir()] == ["000001-shop.wav"]  # only the announcement played
