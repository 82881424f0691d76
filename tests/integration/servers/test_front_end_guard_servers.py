"""Issue 27 item 3 at the network doors: a text that stalls the text front end (a pattern that backtracks
catastrophically in Python's `re`, tests/support/stalling_front_end.py, run by the guard's worker) gets a
Wyoming `error` naming the limit and an HTTP 400, releases its slot, and the next request is served.
The real servers over the real Engine on the fake runner, the real GuardedFrontEnd."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from mosquitto_broker import free_port
from server_rig import start_fake_servers
from stalling_front_end import STALLING_TEXT, prepare_after_backtracking
from wyoming.tts import Synthesize
from wyoming_client import ask, error_of, until_eof

from qwen3tts.synthesis import TextOptions
from qwen3tts.text.guard import GuardedFrontEnd

LIMIT = "the text front end took longer than 1 s"


@pytest.fixture
def running():
    front_end = GuardedFrontEnd(1.0, ("english", "german"), workers=1, target=prepare_after_backtracking)
    options = TextOptions(languages=("english", "german"), front_end=front_end.start())
    running, stop = start_fake_servers("servers.http.enabled=true", f"servers.http.port={free_port()}",
                                       text=options)  # fmt: skip
    yield running
    stop()
    front_end.stop()


def test_wyoming_gets_an_error_naming_the_limit_and_the_next_request_is_served(running):
    port = running.servers.wyoming_port
    received, _ = asyncio.run(until_eof(port, [Synthesize(text=STALLING_TEXT).event()]))
    error = error_of(received)
    assert error.code == "FrontEndTimeout" and LIMIT in error.text, error
    assert running.active() == 0
    served = asyncio.run(ask(port, [Synthesize(text="Next one.").event()], until="audio-stop"))
    assert any(event.type == "audio-chunk" for event in served)


def test_http_gets_400_naming_the_limit_and_the_next_request_is_served(running):
    url = f"{running.http_url}/v1/audio/speech"
    refused = httpx.post(url, json={"input": STALLING_TEXT, "response_format": "pcm"}, timeout=30)
    assert refused.status_code == 400 and LIMIT in refused.text
    assert running.active() == 0
    served = httpx.post(url, json={"input": "Next one.", "response_format": "pcm"}, timeout=30)
    assert served.status_code == 200 and served.content
