"""Every OpenAI response format through the official `openai` client, streamed and not, decoded back;
and the exact requests Home Assistant's openai_tts integration sends (read from its public source)."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import httpx
import numpy as np
import openai
import pytest
from audio_decode import decode

pytestmark = pytest.mark.slow

RATE, FRAME = 24000, 1920
FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "aac": "audio/aac", "flac": "audio/flac",
               "wav": "audio/wav", "pcm": "audio/pcm"}  # fmt: skip
# Encoder delay and padding: MP3 adds ~2 frames of 1152 samples, AAC one of 1024 and a priming frame.
SLACK_S = {"mp3": 0.15, "aac": 0.15, "opus": 0.03, "flac": 0.0, "wav": 0.0, "pcm": 0.0}


def client_for(running) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.http_url}/v1", api_key="unused", max_retries=0)


def expected_seconds(running) -> float:
    return len(running.handles[-1].frames) * FRAME / RATE


@pytest.fixture(scope="module")
def running(serve_module):
    return serve_module()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_the_openai_client_gets_every_format_and_it_decodes_to_the_whole_speech(running, fmt, streamed):
    speech = client_for(running).audio.speech
    args = {"model": "tts-1", "voice": "vivian", "input": "Good morning.", "response_format": fmt}
    if streamed:
        with speech.with_streaming_response.create(**args) as response:
            media_type, parts = response.headers["content-type"], list(response.iter_bytes())
        data = b"".join(parts)
    else:
        response = speech.create(**args)
        media_type, data = response.response.headers["content-type"], response.content
    samples, rate = decode(fmt, data)
    assert media_type == MEDIA_TYPES[fmt] and rate == RATE
    want = expected_seconds(running)
    assert want > 0.2
    assert want - 0.01 <= len(samples) / rate <= want + SLACK_S[fmt] + 0.01
    assert np.sqrt(np.mean(samples**2)) > 1e-3  # sound, not a silent header


def test_mp3_is_the_default_and_audio_streams_before_the_synthesis_ends(serve):
    running = serve("engine.max_frames=200")
    body = {"input": "This one is long enough to take a while on the tiny model, really it is."}
    with httpx.stream("POST", f"{running.http_url}/v1/audio/speech", json=body, timeout=60) as response:
        assert response.headers["content-type"] == "audio/mpeg"
        chunks = response.iter_raw()
        first = next(chunks)
        handle = running.handles[0]
        assert first and not handle.status.is_finished  # bytes arrived while the engine still worked
        rest = b"".join(chunks)
    assert decode("mp3", first + rest)[1] == RATE


@pytest.mark.parametrize("speed", [0.5, 2.0, 4.0])
def test_speed_changes_the_duration_by_time_scale_modification(running, speed):
    response = client_for(running).audio.speech.create(
        model="tts-1", voice="ryan", input="Hello there.", response_format="wav", speed=speed
    )
    samples, rate = decode("wav", response.content)
    ratio = len(samples) / rate / expected_seconds(running)
    assert ratio == pytest.approx(1 / speed, rel=0.08)  # the flushed tail plays at normal speed


def test_openai_voice_names_are_mapped_and_listed_beside_the_bundle_voices(running):
    response = client_for(running).audio.speech.create(model="tts-1", voice="shimmer", input="Hi.",
                                                        response_format="pcm")  # fmt: skip
    assert response.content and running.requests[-1].speaker == "ono_anna"
    listed = httpx.get(f"{running.http_url}/v1/audio/voices").json()["voices"]
    assert {"vivian", "ryan", "alloy", "echo", "fable", "onyx", "nova", "shimmer"} <= set(listed)
    assert httpx.get(f"{running.http_url}/v1/voices").json()["aliases"]["alloy"] == "vivian"


def openai_tts_headers(api_key: str = "") -> dict[str, str]:
    """What openai_tts's engine sends (openaitts_engine.py): JSON, its User-Agent, the key as a bearer."""
    headers = {"Content-Type": "application/json", "User-Agent": "HomeAssistant-OpenAI-TTS"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def test_home_assistant_openai_tts_speak_request_gives_mp3(running):
    """Its non-streaming request: urllib, mp3 hard-coded, the configured speed and instructions (which
    the tiny bundle, shaped like the 0.6B, cannot follow: ignored, and the header says so)."""
    payload = {"model": "tts-1", "input": "The washing machine has finished.", "voice": "nova",
               "response_format": "mp3", "speed": 1.0, "instructions": "Speak calmly."}  # fmt: skip
    request = urllib.request.Request(f"{running.http_url}/v1/audio/speech", data=json.dumps(payload).encode(),
                                     headers=openai_tts_headers("sk-anything"), method="POST")  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as response:
        data, warning = response.read(), response.headers["Qwen3tts-Warning"]
    samples, rate = decode("mp3", data)
    assert rate == RATE and len(samples) / rate >= expected_seconds(running) - 0.01
    assert running.requests[-1].speaker == "serena" and running.requests[-1].instruct is None
    assert warning == "instructions ignored: this bundle cannot follow style instructions"


@pytest.mark.parametrize("fmt", ["mp3", "opus"])
def test_home_assistant_openai_tts_streaming_request(running, fmt):
    """Its streaming request (aiohttp there, httpx here: the same JSON and headers), read in 4 KiB
    chunks as it does; opus when it streams, mp3 in its current release."""
    payload = {"model": "tts-1", "input": "Dinner is ready.", "voice": "alloy", "response_format": fmt,
               "speed": 1}  # fmt: skip

    async def fetch() -> bytes:
        async with httpx.AsyncClient(timeout=60) as client:
            url = f"{running.http_url}/v1/audio/speech"
            async with client.stream("POST", url, json=payload, headers=openai_tts_headers()) as response:
                response.raise_for_status()
                return b"".join([chunk async for chunk in response.aiter_bytes(4096)])

    samples, rate = decode(fmt, asyncio.run(fetch()))
    assert rate == RATE and len(samples) / rate >= expected_seconds(running) - 0.01
