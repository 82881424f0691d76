"""A sound device that stops taking samples, for real: the daemon plays through an ALSA `file` PCM into a
FIFO whose reader (the "speaker", tests/support/fifo_speaker.py) the test stalls, as a stuck driver or a
half-unplugged USB speaker would. The announcement playing then fails with an `error` event, the status
says the output is lost and then ok again (reopened on a new stream), the next announcement plays, and the
systemd watchdog never goes hungry (before, the write blocked the audio thread for good and the watchdog
stopped: systemd would have killed the daemon).
"""

from __future__ import annotations

import ctypes.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import compile_cache
import pytest
from fifo_speaker import FifoSpeaker, asound_conf

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = "stall"
STALL_TIMEOUT_S = 4.0  # a loaded machine may hold a healthy write for a while: well above that
WATCHDOG_USEC = 15_000_000  # well above the stall deadline: a blocked audio thread would starve it


def daemon_config(tmp_path: Path, bundle: Path, broker) -> Path:
    sections = {
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "alsa", "device": "ttsfifo", "stall_timeout_s": STALL_TIMEOUT_S,
                  "lead_in_ms": 100, "tail_ms": 100, "chime_normal": "none", "jitter_buffer_ms": 0},
        "engine": {"max_frames": 24, "temperature": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
        "devices": {"inference_precision": "f32"},
    }  # fmt: skip
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps(sections))
    return path


class NotifyListener:
    """systemd's notify socket: every datagram the daemon sends, with the monotonic time it arrived."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.received: list[tuple[float, str]] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(path))
        self._sock.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.received.append((time.monotonic(), self._sock.recv(4096).decode()))
            except TimeoutError:
                continue

    def pings_after(self, t: float) -> int:
        return sum(1 for at, text in list(self.received) if at > t and text == "WATCHDOG=1")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


def wait_until(predicate, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(
                f"{what} within {timeout:.0f} s; daemon log:\n{log.read_text(errors='replace')[-4000:]}"
            )
        time.sleep(0.05)


@pytest.fixture
def bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "int8")


def test_a_device_that_stops_taking_samples_fails_the_play_reopens_and_the_next_one_plays(
    tmp_path, bundle, mosquitto, recorder_factory
):
    if ctypes.util.find_library("portaudio") is None:
        pytest.fail("libportaudio2 is not installed (apt-get install libportaudio2)", pytrace=False)
    speaker = FifoSpeaker(tmp_path / "speaker.fifo")
    notify = NotifyListener(tmp_path / "notify.sock")
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    log = tmp_path / "daemon.log"
    env = {**os.environ, "ALSA_CONFIG_PATH": str(asound_conf(tmp_path, speaker.fifo)),
           "NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": str(WATCHDOG_USEC)}  # fmt: skip
    with open(log, "wb") as out:
        config = daemon_config(tmp_path, bundle, mosquitto)
        command = [sys.executable, "-m", "qwen3tts", "--config", str(config), "run"]
        daemon = compile_cache.popen(command, tmp_path / "cache", env, stdout=out, stderr=subprocess.STDOUT)

    def events(ann_id: str) -> list[dict]:
        found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
        return [e for e in found if e.get("id") == ann_id]

    def ended(ann_id: str) -> bool:
        return any(e["event"] in ("finished", "error", "cancelled", "expired") for e in events(ann_id))

    def audio_states() -> list[str]:
        return [json.loads(m.payload)["device_plan"]["audio"] for m in recorder.on(f"qwen3tts/{SITE}/status")]

    def say(ann_id: str, text: str) -> None:
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": text}), qos=1)

    try:
        wait_until(lambda: any(m.payload == b"online" for m in recorder.on(f"qwen3tts/{SITE}/availability")),
                   180, "the daemon came not online", log)  # fmt: skip
        say("before", "The speaker works.")
        wait_until(lambda: ended("before"), 120, "'before' did not end", log)
        assert [e["event"] for e in events("before")][-1] == "finished", events("before")

        speaker.stall()
        say("stalled", "Nobody takes these samples.")
        wait_until(lambda: ended("stalled"), 120, "'stalled' did not end", log)
        kinds = [e["event"] for e in events("stalled")]
        assert kinds[-1] == "error" and "finished" not in kinds, events("stalled")
        reason = events("stalled")[-1]["reason"]
        assert f"did not return within {STALL_TIMEOUT_S:g} s: the device takes no samples" in reason, reason
        wait_until(
            lambda: any(s.endswith(":lost") for s in audio_states()), 30, "status never said lost", log
        )
        lost_at = next(i for i, state in enumerate(audio_states()) if state.endswith(":lost"))
        # reopened on a new stream while the old one is still stuck in its write
        wait_until(lambda: any(s.endswith(":ok") for s in audio_states()[lost_at + 1 :]), 60,
                   "the output was not reopened", log)  # fmt: skip
        t_reopened = time.monotonic()

        speaker.resume()
        say("after", "The speaker is back.")
        wait_until(lambda: ended("after"), 120, "'after' did not end", log)
        assert [e["event"] for e in events("after")] == ["queued", "started", "first_audio", "finished"]
        # the watchdog went on: pings after the stall, and never withheld
        wait_until(lambda: notify.pings_after(t_reopened) > 0, 30, "no WATCHDOG=1 after the stall", log)
        assert daemon.poll() is None
        assert "watchdog withheld" not in log.read_text(errors="replace")
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(60) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
        notify.close()
        speaker.close()
