"""The servers' event-loop thread exists only when a server is enabled (servers/__init__.py).

Both disabled (the default): no thread, no socket, stop() still works. Either enabled alone: the
thread runs and a real client gets an answer (the wyoming package's client, an HTTP GET); stop() ends
the thread. The engine is the real Engine over the fake runner: no request here synthesises.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from types import SimpleNamespace

import pytest
from announcer_rig import fake_engine
from mosquitto_broker import free_port
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info

from qwen3tts.servers import Offer, Servers, start_servers
from qwen3tts.settings_loader import load_settings

THREAD = "qwen3tts-servers"
SPEC = SimpleNamespace(speakers=("ryan",), languages=("english",))


def server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


@pytest.fixture
def start():
    started: list[Servers] = []

    def start(*overrides: str) -> Servers:
        settings = load_settings(None, list(overrides))
        offer = Offer.from_spec("fake", SPEC, settings.voice)
        started.append(start_servers(settings, fake_engine(), offer, environ={}))
        return started[-1]

    yield start
    for servers in started:
        servers.stop()


def test_with_both_servers_disabled_no_loop_thread_runs_and_stop_still_works(start):
    before = server_threads()
    servers = start("servers.wyoming.enabled=false", "servers.http.enabled=false")
    assert not servers.running and server_threads() == before
    assert (servers.wyoming_port, servers.http_port) == (None, None)
    servers.stop()
    servers.stop()  # idempotent
    assert not servers.running and server_threads() == before


async def describe(port: int) -> Info:
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=30) as client:
        await client.write_event(Describe().event())
        return Info.from_event(await client.read_event())


def test_wyoming_alone_starts_the_loop_thread_and_answers_describe(start):
    servers = start("servers.wyoming.enabled=true", f"servers.wyoming.port={free_port()}")
    assert servers.running and servers.http_port is None
    info = asyncio.run(describe(servers.wyoming_port))
    assert [voice.name for voice in info.tts[0].voices] == ["ryan@en"]
    servers.stop()
    assert not servers.running


def test_http_alone_starts_the_loop_thread_and_answers_healthz(start):
    servers = start("servers.http.enabled=true", f"servers.http.port={free_port()}")
    assert servers.running and servers.wyoming_port is None
    with urllib.request.urlopen(f"http://127.0.0.1:{servers.http_port}/healthz", timeout=30) as response:
        assert json.loads(response.read())["status"] in ("ready", "degraded")
    servers.stop()
    assert not servers.running
