"""Black box: `qwen3tts run` as a subprocess, driven over MQTT only, on a tiny bundle and a real broker.

What a device owner sees: events queued -> started -> first_audio -> finished, a WAV (or ALSA capture)
with lead-in and tail silence, emergency barge-in, SIGTERM draining to `offline` and exit 0, and the
systemd notify datagrams.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import wave
from pathlib import Path

import compile_cache
import numpy as np
import pytest

pytestmark = pytest.mark.e2e

RATE = 24000
LEAD_IN_MS, TAIL_MS = 200, 300
SITE = "e2e"
PACED_SHORT = {"max_frames": 30}  # 2.4 s per sentence at most: the random model runs to the cap


def config_file(tmp_path: Path, bundle: Path, broker, engine: dict | None = None, **audio) -> Path:
    sections = {
        "engine": engine or {},
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool"), "interrupted": "resume"},
        "audio": {
            "sink": "wav",
            "wav_dir": str(tmp_path / "wav"),
            "lead_in_ms": LEAD_IN_MS,
            "tail_ms": TAIL_MS,
            "chime_normal": "none",
            "chime_priority": "none",
            "chime_emergency": "none",
            "jitter_buffer_ms": 0,
            **audio,
        },
        "thermal": {"enabled": False},
        "devices": {"inference_precision": "f32"},
        "cache": {"phrase_dir": str(tmp_path / "phrases")},  # each test its own phrase cache
    }
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps(sections))  # JSON is YAML
    return path


class Daemon:
    """`qwen3tts --config FILE run` as a child process; stopped by its own pid only."""

    def __init__(self, config: Path, env: dict[str, str] | None = None):
        self.log = config.with_suffix(".log")
        with open(self.log, "wb") as log:
            self.process = compile_cache.popen(
                [sys.executable, "-m", "qwen3tts", "--config", str(config), "run"],
                config.with_suffix(".cache"),  # its own compile cache (the phrase cache is in the config)
                {**os.environ, **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def terminate(self, timeout: float = 60) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def events(recorder, ann_id=None) -> list[dict]:
    found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
    return [e for e in found if ann_id is None or e.get("id") == ann_id]


def wait_event(recorder, ann_id, kind, timeout=90.0) -> dict:
    recorder.wait_for(lambda _: any(e["event"] == kind for e in events(recorder, ann_id)), timeout)
    return next(e for e in events(recorder, ann_id) if e["event"] == kind)


def wait_online(recorder, timeout=120.0) -> None:
    recorder.wait_for(
        lambda msgs: any(m.topic.endswith("/availability") and m.payload == b"online" for m in msgs), timeout
    )


def say(recorder, ann_id, text, **fields) -> None:
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": text, **fields}))


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768


@pytest.fixture(scope="module")
def bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "int8")


@pytest.fixture
def recorder(mosquitto, recorder_factory):
    return recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])


@pytest.fixture
def daemon_factory():
    started: list[Daemon] = []

    def start(config: Path, env=None) -> Daemon:
        started.append(Daemon(config, env))
        return started[-1]

    yield start
    for daemon in started:
        daemon.kill()


def test_an_announcement_goes_from_mqtt_to_a_wav_with_lead_in_and_tail_and_every_event_in_order(
    tmp_path, bundle, mosquitto, recorder, daemon_factory
):
    daemon = daemon_factory(config_file(tmp_path, bundle, mosquitto))
    wait_online(recorder)
    say(recorder, "hello-1", "Hello from the appliance.")
    finished = wait_event(recorder, "hello-1", "finished")
    kinds = [e["event"] for e in events(recorder, "hello-1")]
    assert kinds == ["queued", "started", "first_audio", "finished"], kinds
    assert (
        finished["t_queued"] <= finished["t_started"] <= finished["t_first_audio"] <= finished["t_finished"]
    )
    [wav] = sorted((tmp_path / "wav").glob("*hello-1*.wav"))
    audio = read_wav(wav)
    lead, tail = RATE * LEAD_IN_MS // 1000, RATE * TAIL_MS // 1000
    speech = audio.size - lead - tail
    assert speech > 0 and speech % 1920 == 0, (audio.size, speech)  # whole 80 ms frames of speech
    assert np.abs(audio[:lead]).max() == 0 and np.abs(audio[-tail:]).max() == 0
    assert np.sqrt(np.mean(audio[lead:-tail] ** 2)) > 0.01
    assert daemon.terminate() == 0


def test_sigterm_drains_publishes_offline_and_exits_zero(
    tmp_path, bundle, mosquitto, recorder, daemon_factory
):
    daemon = daemon_factory(config_file(tmp_path, bundle, mosquitto))
    wait_online(recorder)
    say(recorder, "drain-1", "This announcement is still playing when the stop arrives.")
    wait_event(recorder, "drain-1", "first_audio")
    assert daemon.terminate() == 0, daemon.output()[-2000:]
    assert any(e["event"] == "finished" for e in events(recorder, "drain-1"))  # on_shutdown: finish
    availability = [m.payload for m in recorder.on(f"qwen3tts/{SITE}/availability")]
    assert availability[-1] == b"offline"


def test_an_emergency_barges_in_and_the_interrupted_announcement_resumes_afterwards(
    tmp_path, bundle, mosquitto, recorder, daemon_factory
):
    # A paced sink (the WAV file at loudspeaker speed) so the announcement is still playing when the
    # emergency arrives; sentences capped at 2.4 s keep the test short.
    daemon_factory(config_file(tmp_path, bundle, mosquitto, PACED_SHORT, wav_realtime=True))
    wait_online(recorder)
    long_text = " ".join(f"Store notice, part {i}." for i in range(4))
    say(recorder, "normal-1", long_text)
    wait_event(recorder, "normal-1", "first_audio")
    say(recorder, "alarm-1", "Fire alarm. Leave the building now.", priority="emergency")
    alarm = wait_event(recorder, "alarm-1", "finished")
    normal = events(recorder, "normal-1")
    requeued = [e for e in normal if e["event"] == "queued" and "barged in" in e["reason"]]
    assert requeued, normal
    assert requeued[0]["t_event"] <= alarm["t_started"]  # cut before the emergency started speaking
    wait_event(recorder, "normal-1", "finished", timeout=180)
    assert not any(e["event"] in ("finished",) and e["t_event"] < alarm["t_finished"] for e in normal)
    # the cut play is no recording: one WAV of the alarm, one of the resumed play, in that order
    assert [p.name.split("-", 1)[1] for p in sorted((tmp_path / "wav").glob("*.wav"))] == [
        "alarm-1.wav", "normal-1.wav"
    ]  # fmt: skip


def test_the_real_alsa_path_captures_the_announcement_through_a_file_pcm(
    tmp_path, bundle, mosquitto, recorder, daemon_factory
):
    capture = tmp_path / "capture.raw"
    conf = tmp_path / "asound.conf"
    conf.write_text(
        f'</usr/share/alsa/alsa.conf>\npcm.ttsfile {{ type file; slave.pcm "null"; '
        f'file "{capture}"; format "raw" }}\n'
    )
    config = config_file(tmp_path, bundle, mosquitto, sink="alsa", device="ttsfile")
    daemon = daemon_factory(config, env={"ALSA_CONFIG_PATH": str(conf)})
    wait_online(recorder)
    say(recorder, "alsa-1", "Hello through ALSA.")
    wait_event(recorder, "alsa-1", "finished")
    assert daemon.terminate() == 0
    captured = np.frombuffer(capture.read_bytes(), "<f4")
    assert captured.size > RATE // 2  # lead-in + speech + tail at the device rate (>= 44.1 kHz mono)
    assert np.abs(captured).max() > 0.01 and np.isfinite(captured).all()


def test_systemd_notify_sends_ready_status_and_watchdog(
    tmp_path, bundle, mosquitto, recorder, daemon_factory
):
    path = str(tmp_path / "notify.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.settimeout(120)
    try:
        daemon = daemon_factory(
            config_file(tmp_path, bundle, mosquitto), env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"}
        )
        received = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            "WATCHDOG=1" in received and any(r.startswith("READY=1") for r in received)
        ):
            received.append(server.recv(4096).decode())
        assert any(r.startswith("READY=1") for r in received), received
        assert any("STATUS=" in r for r in received)
        assert any(r.startswith("EXTEND_TIMEOUT_USEC=") for r in received)  # asked while compiling
        assert "WATCHDOG=1" in received
        assert daemon.terminate() == 0
        server.settimeout(1)
        tail = []
        try:
            while True:
                tail.append(server.recv(4096).decode())
        except TimeoutError:
            pass
        assert any(r.startswith("STOPPING=1") for r in tail + received)
    finally:
        server.close()


def test_a_priority_announcement_takes_over_at_the_next_sentence_boundary(
    tmp_path, bundle, mosquitto, recorder, daemon_factory
):
    daemon_factory(config_file(tmp_path, bundle, mosquitto, PACED_SHORT, wav_realtime=True))  # still playing
    wait_online(recorder)
    say(recorder, "normal-2", " ".join(f"Store notice, part {i}." for i in range(4)))
    wait_event(recorder, "normal-2", "first_audio")
    say(recorder, "prio-1", "Customer announcement.", priority="priority")
    prio = wait_event(recorder, "prio-1", "finished")
    normal = events(recorder, "normal-2")
    takeover = [e for e in normal if e["event"] == "queued" and "took over" in e["reason"]]
    assert takeover, normal
    assert takeover[0]["t_event"] <= prio["t_started"]
    assert "resumes from sentence" in takeover[0]["reason"]
    assert not any(e["event"] == "cancelled" for e in normal)
    wait_event(recorder, "normal-2", "finished", timeout=180)


def test_sighup_reloads_voice_volume_and_topics_without_dropping_the_queue(
    tmp_path, bundle, mosquitto, recorder_factory, daemon_factory
):
    recorder = recorder_factory(mosquitto, ["qwen3tts/#"])
    config = config_file(tmp_path, bundle, mosquitto)
    daemon = daemon_factory(config)
    wait_online(recorder)
    say(recorder, "first", " ".join(f"Queue check, part {i}." for i in range(3)))
    say(recorder, "second", "Still here after the reload.")
    wait_event(recorder, "first", "first_audio")
    sections = json.loads(config.read_text())
    sections["audio"]["volume"] = 0.25
    sections["voice"] = {"voice": "ryan"}
    sections["mqtt"]["site"] = "reloaded"
    config.write_text(json.dumps(sections))
    daemon.process.send_signal(signal.SIGHUP)
    recorder.wait_for(
        lambda msgs: any(
            m.topic == "qwen3tts/reloaded/availability" and m.payload == b"online" for m in msgs
        ),
        60,
    )

    def second_finished(msgs):
        return any(
            m.topic == "qwen3tts/reloaded/event"
            and json.loads(m.payload).get("id") == "second"
            and json.loads(m.payload)["event"] == "finished"
            for m in msgs
        )

    recorder.wait_for(second_finished, 120)  # queued before the reload, spoken after it
    time.sleep(2)  # a duplicate from a second spool replay would have started by now
    done = [
        m
        for m in recorder.messages
        if m.topic.endswith("/event")
        and json.loads(m.payload)["event"] == "started"
        and json.loads(m.payload).get("id") == "second"
    ]
    assert len(done) == 1, "the reload must not replay the spool a second time"
    status = json.loads(recorder.on("qwen3tts/reloaded/status")[-1].payload)
    assert status["volume"] == 0.25 and status["voice"] == "ryan"
    assert daemon.terminate() == 0
