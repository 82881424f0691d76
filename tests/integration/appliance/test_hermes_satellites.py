"""A real daemon (`qwen3tts run`, tiny bundle) speaking for two Rhasspy satellites on a real mosquitto.

A fake satellite (a paho client, as a Rhasspy satellite's audio server is) plays nothing: it receives
`hermes/audioServer/porch/playBytes/<id>`, parses the WAV and, a moment later, sends its `playFinished`.
The daemon's `sayFinished` must come only after that; the satellite `attic` never answers, so its say ends
after the timeout with an `error` naming the zone and still exactly one sayFinished. getVoices is
answered with the bundle's speakers; hostile satellite traffic leaves the daemon serving.
"""

from __future__ import annotations

import io
import json
import threading
import time
import wave
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from daemon_process import DaemonProcess

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

SITE = "hermes-box"
RATE = 24000
REPLY_DELAY_S = 1.0
"""How long the fake satellite 'plays' before its playFinished."""


class FakeSatellite:
    """Rhasspy's audio server of one site, minus the sound: WAVs in, playFinished out after a delay."""

    def __init__(self, broker, site: str) -> None:
        self.site = site
        self.wavs: dict[str, bytes] = {}
        self.answered_at: dict[str, float] = {}
        self._subscribed = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
        self.client.on_connect = lambda c, *a: c.subscribe(f"hermes/audioServer/{site}/playBytes/+", 1)
        self.client.on_subscribe = lambda *a: self._subscribed.set()
        self.client.on_message = self._play_bytes
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()
        assert self._subscribed.wait(5), "the satellite could not subscribe"

    def _play_bytes(self, client, userdata, msg) -> None:
        request_id = msg.topic.rsplit("/", 1)[-1]
        self.wavs[request_id] = bytes(msg.payload)
        threading.Timer(REPLY_DELAY_S, self._finished, (request_id,)).start()

    def _finished(self, request_id: str) -> None:
        self.answered_at[request_id] = time.time()
        payload = json.dumps({"id": request_id, "siteId": self.site})
        self.client.publish(f"hermes/audioServer/{self.site}/playFinished", payload, qos=1)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def start_daemon(tmp_path: Path, bundle: Path, broker) -> DaemonProcess:
    return DaemonProcess(tmp_path, {
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False, "hermes": True,
                 "hermes_satellites": ["porch", "attic"], "hermes_play_timeout": 1.0},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav"), "lead_in_ms": 0, "tail_ms": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
        "engine": {"max_frames": 24, "temperature": 0},
    })  # fmt: skip


def payloads(recorder, topic: str) -> list[dict]:
    return [json.loads(m.payload) for m in recorder.on(topic)]


def said_finished(recorder, ann_id: str) -> list[dict]:
    return [p for p in payloads(recorder, "hermes/tts/sayFinished") if p.get("id") == ann_id]


def events(recorder, ann_id: str) -> list[dict]:
    return [e for e in payloads(recorder, f"qwen3tts/{SITE}/event") if e.get("id") == ann_id]


@pytest.fixture
def rig(mosquitto, recorder_factory, tiny_models, tmp_path):
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    speakers = sorted(json.loads((bundle / "manifest.json").read_text())["spec"]["speakers"])
    recorder = recorder_factory(mosquitto, ["hermes/#", "rhasspy/#", f"qwen3tts/{SITE}/#"])
    satellite = FakeSatellite(mosquitto, "porch")
    daemon = start_daemon(tmp_path, bundle, mosquitto)
    try:
        online = (f"qwen3tts/{SITE}/availability", b"online")
        recorder.wait_for(lambda msgs: any((m.topic, m.payload) == online for m in msgs), 120)
        yield recorder, satellite, speakers
    except BaseException:
        print(daemon.log_tail())
        raise
    finally:
        satellite.close()
        daemon.kill()


def test_a_satellites_say_goes_out_as_a_wav_and_say_finished_follows_its_play_finished(rig):
    recorder, satellite, _ = rig
    say = {"text": "Die Tür ist offen.", "id": "sat-1", "siteId": "porch", "sessionId": "s-1"}
    recorder.publish("hermes/tts/say", json.dumps(say))
    recorder.wait_for(lambda _: said_finished(recorder, "sat-1"), 120)
    arrived = time.time()
    with wave.open(io.BytesIO(satellite.wavs["sat-1"])) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (RATE, 1, 2)
        assert wav.getnframes() > RATE // 10
    assert "sat-1" in satellite.answered_at and satellite.answered_at["sat-1"] <= arrived
    order = [m.topic for m in recorder.messages if m.topic.endswith(("/playFinished", "/sayFinished"))]
    assert order.index("hermes/audioServer/porch/playFinished") < order.index("hermes/tts/sayFinished")
    assert said_finished(recorder, "sat-1") == [{"id": "sat-1", "siteId": "porch", "sessionId": "s-1"}]
    finished = [e for e in events(recorder, "sat-1") if e["event"] == "finished"]
    assert finished and finished[0].get("zones") == ["porch"], events(recorder, "sat-1")


def test_a_satellite_that_never_answers_gets_its_say_finished_after_the_timeout_with_an_error(rig):
    recorder, satellite, _ = rig
    recorder.publish(
        "hermes/tts/say", json.dumps({"text": "Hallo Dachboden.", "id": "sat-2", "siteId": "attic"})
    )
    recorder.wait_for(lambda _: said_finished(recorder, "sat-2"), 120)
    (error,) = [e for e in events(recorder, "sat-2") if e["event"] == "error"]
    assert "satellite attic sent no playFinished" in error["reason"], error
    assert [e["event"] for e in events(recorder, "sat-2")].count("finished") == 0
    (hermes_error,) = [p for p in payloads(recorder, "hermes/error/tts") if p.get("context") == "sat-2"]
    assert "attic" in hermes_error["error"]
    time.sleep(0.5)  # a second sayFinished would be a bug: none may follow
    assert len(said_finished(recorder, "sat-2")) == 1
    assert "sat-2" not in satellite.wavs  # porch never heard attic's announcement


def test_get_voices_is_answered_with_the_bundles_voices_and_hostile_traffic_leaves_it_serving(rig):
    recorder, satellite, speakers = rig
    recorder.publish("rhasspy/tts/getVoices", json.dumps({"id": "v-1", "siteId": "porch"}))
    recorder.publish("hermes/tts/getVoices", json.dumps({"id": "v-2", "siteId": "default"}))
    recorder.wait_for(lambda _: recorder.on("rhasspy/tts/voices") and recorder.on("hermes/tts/voices"), 30)
    for topic, ask in (("rhasspy/tts/voices", "v-1"), ("hermes/tts/voices", "v-2")):
        (answer,) = payloads(recorder, topic)
        assert answer["id"] == ask and sorted(v["voiceId"] for v in answer["voices"]) == speakers
    for topic, payload in (
        ("hermes/audioServer/porch/playFinished", b"{not json"),
        ("hermes/audioServer/porch/playFinished", json.dumps({"id": "x" * 100_000}).encode()),
        ("hermes/audioServer/porch/playFinished", b'{"id": "nobody-waits"}'),
        ("hermes/tts/say", json.dumps({"text": "x", "siteId": "porch/+/#"}).encode()),
        ("hermes/tts/say", json.dumps({"text": "x", "id": "y" * 5000, "siteId": "porch"}).encode()),
        ("rhasspy/tts/getVoices", b"\xff\xfe\x00"),
    ):
        recorder.publish(topic, payload)
    recorder.publish("hermes/tts/say", json.dumps({"text": "Noch da.", "id": "sat-3", "siteId": "porch"}))
    recorder.wait_for(lambda _: said_finished(recorder, "sat-3"), 120)
    assert "sat-3" in satellite.wavs
    assert not [e for e in payloads(recorder, f"qwen3tts/{SITE}/event") if e["event"] == "error"]
