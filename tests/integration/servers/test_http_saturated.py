"""The whole daemon with its HTTP server saturated: more idle connections than the cap, from several
addresses, plus clients holding both synthesis slots and reading nothing. MQTT announcements still
play, and the HTTP server answers again once the clients are gone (issue 27 items 2 and 10)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from daemon_config import start_daemon
from mosquitto_broker import free_port

pytestmark = pytest.mark.slow
SITE = "saturated"
LONG = "This sentence is long enough to keep the tiny model busy for quite a few seconds, really. "


@pytest.fixture
def daemon(tmp_path, mosquitto, tiny_models):
    port = free_port()
    servers = {"http": {"enabled": True, "port": port}, "max_connections": 16,
               "max_connections_per_client": 4, "idle_timeout_s": 60, "write_timeout_s": 60}  # fmt: skip
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    service = start_daemon(tmp_path, bundle, mosquitto, SITE, servers)
    yield service, port, tmp_path / "wav"
    service.stop()


def idle_connection(port: int, source: str) -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def stalled_speech(port: int) -> socket.socket:
    """A speech request whose client never reads the audio (its receive buffer tiny)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    body = json.dumps({"input": LONG * 4, "response_format": "pcm"}).encode()
    sock.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
    return sock


def test_mqtt_announcements_play_while_http_is_saturated(daemon, mosquitto, recorder_factory):
    service, port, wav_dir = daemon
    held = [stalled_speech(port) for _ in range(2)]  # both network slots, never read
    deadline = time.monotonic() + 30
    while service.servers.gateway.streams.__len__() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(service.servers.gateway.streams) == 2
    sources = [f"127.0.0.{n}" for n in range(2, 12)]
    held += [idle_connection(port, source) for source in sources for _ in range(4)]  # 40 > the cap of 16
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/event"])
    recorder.publish(
        f"qwen3tts/{SITE}/say", json.dumps({"id": "still-here", "text": "The shop is open."}), qos=1
    )
    recorder.wait_for(
        lambda msgs: any(b'"finished"' in m.payload and b"still-here" in m.payload for m in msgs), 120
    )
    assert [p.name for p in wav_dir.iterdir()] == ["000001-still-here.wav"]
    busy = httpx.post(f"http://127.0.0.1:{port}/v1/audio/speech", json={"input": "Me too."}, timeout=10)
    assert busy.status_code in (429, 503)  # refused at once, not hung
    for sock in held:
        sock.close()
    deadline = time.monotonic() + 30
    while (service.servers.gateway.streams or _open(service)) and time.monotonic() < deadline:
        time.sleep(0.05)
    ok = httpx.post(f"http://127.0.0.1:{port}/v1/audio/speech", json={"input": "Back again."}, timeout=60)
    assert ok.status_code == 200 and ok.content


def _open(service) -> bool:
    """Whether the announcer still plays (the last check waits for a quiet engine too)."""
    stats = service.runtime.engine.stats()
    return bool(stats.num_running or stats.num_waiting)
