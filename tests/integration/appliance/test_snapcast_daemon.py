"""A real daemon (`qwen3tts run`, tiny bundle) with two zones driven over a real mosquitto: `snap`, a
Snapcast output into a real snapserver heard by a real `snapclient --player file`, and `desk`, WAV files.

An all-call is played in both zones and `finished` names both: the client's file holds sound, the desk
has its WAV. With snapserver stopped, the next announcement gets an `error` event naming the zone `snap`
while `desk` plays it and it finishes there.
"""

from __future__ import annotations

import json
import time
import wave
from pathlib import Path

import numpy as np
import pytest
from daemon_process import DaemonProcess
from snapcast_rig import Snapclient, Snapserver
from test_doctor_snapcast import snapserver  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

SITE = "snap-box"


@pytest.fixture
def snapcast(snapserver):  # noqa: F811 - the imported fixture
    """The doctor test's snapserver, and one client of it."""
    client = Snapclient(snapserver, "lobby")
    client.start()
    try:
        yield snapserver, client
    finally:
        client.stop()


def start_daemon(tmp_path: Path, bundle: Path, broker, server: Snapserver) -> DaemonProcess:
    snap = {"control_port": server.control_port, "source": server.tcp_source, "stream": "announcements",
            "buffer_ms": 1000}  # fmt: skip
    return DaemonProcess(tmp_path, {
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none"},
        "zones": [{"name": "snap", "output": "snapcast", "snapcast": snap},
                  {"name": "desk", "output": "wav", "wav_dir": str(tmp_path / "desk")}],
        "thermal": {"enabled": False}, "cache": {"enabled": False},
        "engine": {"max_frames": 24, "temperature": 0},
    })  # fmt: skip


def events(recorder, ann_id: str) -> list[dict]:
    found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
    return [e for e in found if e.get("id") == ann_id]


def ended(recorder, ann_id: str) -> bool:
    return any(e["event"] in ("finished", "cancelled") for e in events(recorder, ann_id)) or (
        any(e["event"] == "error" and not e.get("zone") for e in events(recorder, ann_id))
    )


def loudest(samples: np.ndarray, window: int = 4800) -> float:
    """The RMS of the loudest 100 ms of a client's file (silence while its stream is idle)."""
    if len(samples) < window:
        return 0.0
    frames = samples[: len(samples) // window * window].reshape(-1, window)
    return float(np.sqrt((frames**2).mean(axis=1)).max())


def test_an_all_call_plays_in_both_zones_and_a_stopped_snapserver_fails_only_its_zone(
    mosquitto, recorder_factory, tiny_models, tmp_path, snapcast
):
    server, client = snapcast
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    daemon = start_daemon(tmp_path, bundle, mosquitto, server)
    try:
        online = (f"qwen3tts/{SITE}/availability", b"online")
        recorder.wait_for(lambda msgs: any((m.topic, m.payload) == online for m in msgs), 120)
        before = loudest(client.mono()) if client.frames() else 0.0
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "both-1", "text": "Achtung am Gleis."}))
        recorder.wait_for(lambda _: ended(recorder, "both-1"), 120)
        (finished,) = [e for e in events(recorder, "both-1") if e["event"] == "finished"]
        assert sorted(finished["zones"]) == ["desk", "snap"], events(recorder, "both-1")
        assert not [e for e in events(recorder, "both-1") if e["event"] == "error"]
        (wav_path,) = (tmp_path / "desk").glob("*.wav")
        with wave.open(str(wav_path)) as wav:
            assert wav.getnframes() > 0
        time.sleep(1.5)  # the client plays the last sample a buffer (1000 ms) after it was written
        assert before < 0.01 and loudest(client.mono()) > 0.01  # the announcement reached the client

        server.stop()
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "desk-2", "text": "Nur am Schreibtisch."}))
        recorder.wait_for(lambda _: ended(recorder, "desk-2"), 120)
        seen = events(recorder, "desk-2")
        zone_errors = [e for e in seen if e["event"] == "error"]
        assert [e.get("zone") for e in zone_errors] == ["snap"], seen
        assert "snap" in zone_errors[0]["reason"]
        (finished,) = [e for e in seen if e["event"] == "finished"]
        assert finished["zones"] == ["desk"], seen
        assert len(list((tmp_path / "desk").glob("*.wav"))) == 2
        assert daemon.running()
    except BaseException:
        print(daemon.log_tail())
        raise
    finally:
        daemon.kill()
