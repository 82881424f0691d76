"""Issue 27 item 2, as the attack was run: 1100 idle connections to the Wyoming port of a daemon held to
1024 file handles (the unit's old limit). The daemon runs as a subprocess with the real broker, the tiny
bundle and both servers, once with the default caps (8 per client: the flood is over the cap) and once
with the caps out of the way, so only the file reserve stands between the flood and the spool. An MQTT
announcement still plays (spooled, synthesised, written as a WAV), HTTP still answers under the caps (with
them out of the way it is refused until the flood leaves: the reserve is the daemon's), the log holds no
traceback and no "Too many open files", and once the flood leaves a new Wyoming client and HTTP are served."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import compile_cache
import pytest
from mosquitto_broker import free_port
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = "flood"
FILE_LIMIT = 1024
FLOOD = 1100


CAPS_OUT_OF_THE_WAY = {"max_connections": 4096, "max_connections_per_client": 4096, "idle_timeout_s": 300}
GUARDS = {  # what refuses the flood, and the log line that says so
    "caps": ({}, "connections from 127.0.0.1 are open"),
    "file reserve": (CAPS_OUT_OF_THE_WAY, "file handles low"),
}


def config_file(tmp_path: Path, bundle: Path, broker, wyoming_port: int, http_port: int, limits) -> Path:
    sections = {
        "model": {"bundle": str(bundle)},
        "engine": {"max_frames": 30},
        "devices": {"inference_precision": "f32"},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav"), "lead_in_ms": 0, "tail_ms": 0,
                  "chime_normal": "none", "jitter_buffer_ms": 0},
        "thermal": {"enabled": False},
        "cache": {"enabled": False},
        "servers": {
            "wyoming": {"enabled": True, "port": wyoming_port, "zeroconf": False},
            "http": {"enabled": True, "port": http_port},
            **limits,
        },
    }  # fmt: skip
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps(sections))
    return path


def held_to_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture
def room_for_the_flood():
    """This test process opens FLOOD sockets itself."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < FLOOD + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * FLOOD), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def described(port: int) -> bool:
    """True once a Describe is answered with info. While the daemon is still closing the flood's
    connections a newcomer is refused: closed (file reserve) or told `too_many_connections` (caps)."""
    try:
        events = asyncio.run(until_eof_or_info(port))
    except ConnectionError:
        return False
    if events and events[-1].type == "info":
        return True
    refused = [(e.type, (e.data or {}).get("code")) for e in events]
    assert refused == [("error", "too_many_connections")], events
    return False


async def until_eof_or_info(port: int) -> list:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        received = []
        async with asyncio.timeout(10):
            while (event := await client.read_event()) is not None:
                received.append(event)
                if event.type == "info":
                    break
        return received


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def played_during_the_flood(messages) -> bool:
    return any(b'"finished"' in m.payload and b"during-flood" in m.payload for m in messages)


def http_ok(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
        return answer.status == 200


@pytest.mark.parametrize("guard", list(GUARDS))
def test_a_thousand_idle_wyoming_connections_leave_mqtt_playing_and_http_answering(
    tmp_path, tiny_models, mosquitto, recorder_factory, room_for_the_flood, guard
):
    limits, refusal = GUARDS[guard]
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    wyoming_port, http_port = free_port(), free_port()
    config = config_file(tmp_path, bundle, mosquitto, wyoming_port, http_port, limits)
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    log_path = tmp_path / "daemon.log"
    command = [sys.executable, "-m", "qwen3tts", "--config", str(config), "run"]
    with open(log_path, "wb") as log:
        daemon = compile_cache.popen(
            command, tmp_path / "cache", stdout=log, stderr=subprocess.STDOUT, preexec_fn=held_to_file_limit
        )
    flood: list[socket.socket] = []
    availability = f"qwen3tts/{SITE}/availability"
    try:
        try:
            wait_until(lambda: any(m.payload == b"online" for m in recorder.on(availability)), 180, "online")
            for _ in range(FLOOD):
                flood.append(socket.create_connection(("127.0.0.1", wyoming_port), timeout=10))
            wait_until(lambda: refusal.encode() in log_path.read_bytes(), 30, "the flood refused")

            say = {"id": "during-flood", "text": "Still here."}
            recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(say), qos=1)
            recorder.wait_for(played_during_the_flood, 120)
            assert [p.name for p in (tmp_path / "wav").iterdir()] == ["000001-during-flood.wav"]
            if guard == "caps":  # the caps leave handles for the other door too
                assert http_ok(http_port)
            else:  # with the caps out of the way the flood holds every handle above the reserve, and the
                # reserve is the daemon's, not a door's: HTTP is refused (closed, nothing logged per try)
                with pytest.raises((ConnectionError, OSError)):
                    http_ok(http_port)
        finally:
            for sock in flood:
                sock.close()
        # the flood has left: once the daemon has closed its side of it, a new client is served
        wait_until(lambda: described(wyoming_port), 30, "a Wyoming client served again")
        assert http_ok(http_port)
    finally:  # whatever failed: the daemon this test started is ended
        daemon.terminate()
        daemon.wait(60)
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text and "Too many open files" not in text and "spool write failed" not in text
    assert text.count(refusal) <= 2  # throttled: once per minute, not once per connection
    assert len(text.splitlines()) < 200, os.linesep.join(text.splitlines()[-40:])
