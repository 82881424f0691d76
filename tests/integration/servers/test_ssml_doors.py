"""SSML over the network doors, on the real engine with the tiny bundle: HTTP (the `openai` client and
httpx) and Wyoming (the `wyoming` package's client) read a document through the same path as MQTT,
with the same reasons for what they refuse."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import openai
import pytest
from ssml_documents import BREAK_750, INVALID, longest_silence
from ssml_documents import HOSTILE as HOSTILE_DOCUMENTS
from wyoming.audio import AudioChunk
from wyoming.tts import Synthesize
from wyoming_client import ask, error_of, until_eof

HOSTILE = [
    *HOSTILE_DOCUMENTS,
    *INVALID,
    ('<speak>Hi <audio src="normal"/></speak>', "not a configured chime"),
]


@pytest.fixture(scope="module")
def running(serve_module):
    """One engine and both servers for the whole module (each test reads only its own requests)."""
    return serve_module()


def silence_between(samples: np.ndarray) -> int:
    """Length of the longest run of exact zero samples, which must lie between speech."""
    length, start = longest_silence(samples)
    assert start > 0 and start + length < len(samples)
    return length


def test_http_speaks_an_ssml_break_as_750_ms_of_silence(running):
    client = openai.OpenAI(base_url=f"{running.http_url}/v1", api_key="unused", max_retries=0)
    with client.audio.speech.with_streaming_response.create(
        model="qwen3tts", voice="vivian", input=BREAK_750, response_format="pcm"
    ) as response:
        pcm = np.frombuffer(b"".join(response.iter_bytes()), "<i2")
    assert [r.text for r in running.requests[-2:]] == ["Platform one.", "Platform two."]
    assert abs(silence_between(pcm) - 18000) <= 960
    speech = sum(len(h.frames) for h in running.handles[-2:]) * 1920
    assert len(pcm) == speech + 18000


def test_http_ssml_field_lang_voice_and_rate_and_a_warning_header(running):
    text = (
        '<speak>Hello <blink>there</blink>. <lang xml:lang="de">Guten Morgen.</lang>'
        '<voice name="RYAN"><prosody rate="200%">Welcome.</prosody></voice></speak>'
    )
    body = {"input": f"  {text}", "ssml": True, "voice": "vivian", "response_format": "pcm"}
    before = len(running.requests)
    response = httpx.post(f"{running.http_url}/v1/audio/speech", json=body, timeout=120)
    assert response.status_code == 200
    assert "<blink> is not supported" in response.headers["qwen3tts-warning"]
    mine = [(r.text, r.language, r.speaker) for r in running.requests[before:]]
    assert mine == [("Hello there.", "auto", "vivian"), ("Guten Morgen.", "german", "vivian"),
                    ("Welcome.", "auto", "ryan")]  # fmt: skip
    frames = [len(h.frames) * 1920 for h in running.handles[before:]]
    samples = len(response.content) // 2
    assert samples < sum(frames) - frames[2] / 3  # the last piece at twice the speed: half as long


def test_http_ssml_false_reads_markup_as_text(running):
    body = {"input": "<speak>Hi</speak>", "ssml": False, "response_format": "pcm"}
    response = httpx.post(f"{running.http_url}/v1/audio/speech", json=body, timeout=120)
    assert response.status_code == 200 and "speak" in running.requests[-1].text


@pytest.mark.parametrize(("text", "reason"), HOSTILE)
def test_http_refuses_a_bad_or_hostile_document_with_a_400_naming_input(running, text, reason):
    before = len(running.requests)
    body = {"input": text, "response_format": "pcm"}
    response = httpx.post(f"{running.http_url}/v1/audio/speech", json=body, timeout=5)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "input" and reason in error["message"], error
    assert len(running.requests) == before  # nothing reached the engine


def test_http_ssml_must_be_a_boolean(running):
    response = httpx.post(
        f"{running.http_url}/v1/audio/speech", json={"input": "Hi", "ssml": "yes"}, timeout=5
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "ssml"


def test_wyoming_speaks_an_ssml_break_as_750_ms_of_silence(running):
    port = running.servers.wyoming_port
    events = asyncio.run(ask(port, [Synthesize(text=BREAK_750).event()], until="audio-stop", deadline_s=120))
    pcm = np.frombuffer(b"".join(AudioChunk.from_event(e).audio for e in events if e.type == "audio-chunk"),
                        "<i2")  # fmt: skip
    assert [r.text for r in running.requests[-2:]] == ["Platform one.", "Platform two."]
    assert abs(silence_between(pcm) - 18000) <= 960


@pytest.mark.parametrize(("text", "reason"), HOSTILE)
def test_wyoming_refuses_a_bad_or_hostile_document_with_one_error(running, text, reason):
    before = len(running.requests)
    events, _ = asyncio.run(until_eof(running.servers.wyoming_port, [Synthesize(text=text).event()]))
    error = error_of(events)
    assert reason in error.text, json.dumps(error.text)
    assert len(running.requests) == before
