"""The whole daemon in process on the real tiny bundle: an MQTT announcement and an HTTP request share
the engine (one engine, one policy), and the HTTP audio never reaches the appliance's own speaker."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading

import httpx
import pytest
from announcer_rig import start_subscribed
from endless import without_end
from mosquitto_broker import free_port

from qwen3tts.engine.sequence import SequenceStatus
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
                "engine": {"max_frames": 2048, "temperature": 0},  # the HTTP request runs on (see below)
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
    handles, both_submitted = http_runs_until_hung_up(engine)
    # One sentence each, so a decode step with two requests can only hold both doors' requests.
    body = {"input": "Welcome to the store and have a nice day.", "voice": "vivian", "response_format": "pcm"}
    with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=120) as response:
        chunks = response.iter_raw()
        first = next(chunks)  # the HTTP request runs: the announcement joins it
        reader = threading.Thread(target=read_on, args=(chunks,))
        reader.start()  # a client that reads on (one that stopped would be cut off by the write timeout)
        say = {"id": "shop", "text": "The store closes soon."}
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(say), qos=1)
        assert both_submitted.wait(60), handles
        [(http_id, http), (_, announcement)] = handles
        assert http_id.startswith("http") and announcement.wait(120)
        assert not http.wait(0)  # still running when the announcement had ended: they overlapped
        stats = engine.stats()
    reader.join(30)
    recorder.wait_for(lambda msgs: any(b'"finished"' in m.payload for m in msgs), 120)
    assert first and stats.num_frames > stats.num_steps, stats  # some decode steps ran both requests
    assert http.wait(30) and http.status is SequenceStatus.FINISHED_CANCELLED  # the client hung up
    assert [p.name for p in wav_dir.iterdir()] == ["000001-shop.wav"]  # only the announcement played


def read_on(chunks) -> None:
    with contextlib.suppress(httpx.HTTPError, httpx.StreamError):  # until the test hangs up
        for _ in chunks:
            pass


def http_runs_until_hung_up(engine) -> tuple[list, threading.Event]:
    """Record every (request id, handle) the engine gets; the HTTP request's sentence gets no end of speech
    and a frame cap far beyond the test, so it runs on, on any machine, until its client hangs up."""
    handles, both_submitted = [], threading.Event()
    submit = engine.submit

    def recording_submit(request):
        if request.id.startswith("http"):
            request = dataclasses.replace(without_end(request), max_frames=2048)
        handle = submit(request)
        handles.append((request.id, handle))
        if len(handles) == 2:
            both_submitted.set()
        return handle

    engine.submit = recording_submit
    return handles, both_submitted
