"""What OpenAI clients name and send, through the official `openai` client and raw httpx (issue 36 item 4):
every current OpenAI voice speaks with the speaker the documented table maps it to, /v1/models lists
OpenAI's speech models in OpenAI's shape, and `speed` may come as a numeric string."""

from __future__ import annotations

import httpx
import openai
import pytest
from audio_decode import decode

from qwen3tts.settings import HttpServerSettings

pytestmark = pytest.mark.slow

RATE, FRAME = 24000, 1920
OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer",
                 "verse", "marin", "cedar")  # fmt: skip
"""OpenAI's speech voices as its API reference lists them (2026)."""


def client_for(running) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.http_url}/v1", api_key="unused", max_retries=0, timeout=90)


@pytest.fixture(scope="module")
def running(serve_module):
    return serve_module("engine.max_frames=12")  # short: 13 voices are spoken


def test_the_default_table_maps_every_current_openai_voice_to_a_bundle_speaker(running):
    table = dict(entry.split("=") for entry in HttpServerSettings().voice_map)
    assert set(table) == set(OPENAI_VOICES)
    assert set(table.values()) <= set(running.runtime.spec.speakers)


@pytest.mark.parametrize("voice", OPENAI_VOICES)
def test_every_openai_voice_speaks_with_the_speaker_the_table_names(running, voice):
    table = dict(entry.split("=") for entry in running.settings.servers.http.voice_map)
    response = client_for(running).audio.speech.create(model="gpt-4o-mini-tts", voice=voice, input="Hi.",
                                                        response_format="pcm")  # fmt: skip
    assert response.content and running.requests[-1].speaker == table[voice]
    assert "qwen3tts-warning" not in response.response.headers


def test_the_openai_voices_are_listed_with_their_speakers(running):
    aliases = httpx.get(f"{running.http_url}/v1/voices", timeout=30).json()["aliases"]
    assert set(OPENAI_VOICES) <= set(aliases)
    assert set(OPENAI_VOICES) <= set(
        httpx.get(f"{running.http_url}/v1/audio/voices", timeout=30).json()["voices"]
    )


def test_an_unknown_voice_is_still_a_400_naming_the_known_ones(running):
    with pytest.raises(openai.BadRequestError, match=r"unknown voice 'ballet'.*cedar") as raised:
        client_for(running).audio.speech.create(model="tts-1", voice="ballet", input="Hi.")
    assert raised.value.body["param"] == "voice"


def test_a_table_from_the_settings_replaces_the_default(serve):
    running = serve("servers.http.voice_map=[coral=ryan]")
    client = client_for(running)
    client.audio.speech.create(model="tts-1", voice="coral", input="Hi.", response_format="pcm")
    assert running.requests[-1].speaker == "ryan"
    with pytest.raises(openai.BadRequestError, match="unknown voice 'alloy'"):
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.")


def test_models_lists_the_bundle_and_openai_speech_models_in_openai_shape(running):
    body = httpx.get(f"{running.http_url}/v1/models", timeout=30).json()
    assert body["object"] == "list"
    for entry in body["data"]:
        assert set(entry) == {"id", "object", "created", "owned_by"} and entry["object"] == "model"
        assert isinstance(entry["created"], int) and entry["created"] > 1_700_000_000
    listed = [model.id for model in client_for(running).models.list()]
    assert listed == [running.servers.gateway.offer.name, "tts-1", "tts-1-hd", "gpt-4o-mini-tts"]
    assert client_for(running).models.retrieve("tts-1-hd").owned_by == "qwen3tts"
    with pytest.raises(openai.NotFoundError):
        client_for(running).models.retrieve("whisper-1")


@pytest.mark.parametrize("model", ["tts-1", "tts-1-hd", "gpt-4o-mini-tts"])
def test_each_listed_openai_model_is_accepted_for_speech(running, model):
    response = client_for(running).audio.speech.create(model=model, voice="vivian", input="Hi.",
                                                        response_format="pcm")  # fmt: skip
    assert response.content


def test_speed_as_a_numeric_string_is_honoured_like_the_number(running):
    url = f"{running.http_url}/v1/audio/speech"
    durations = {}
    for speed in (1, "2.0"):
        body = {"input": "Hello there.", "voice": "ryan", "response_format": "wav", "speed": speed}
        response = httpx.post(url, json=body, timeout=60)
        assert response.status_code == 200, response.text
        samples, rate = decode("wav", response.content)
        durations[speed] = (len(samples) / rate) / (len(running.handles[-1].frames) * FRAME / RATE)
    assert durations[1] == pytest.approx(1.0, abs=0.01)
    assert durations["2.0"] == pytest.approx(0.5, rel=0.1)


@pytest.mark.parametrize("speed", ["fast", "", "nan", "inf", "1e0", "1_0", "4.5", "0.1", " ", "0x1"])
def test_a_speed_string_that_is_not_a_number_in_range_is_a_400(running, speed):
    body = {"input": "Hi.", "speed": speed}
    response = httpx.post(f"{running.http_url}/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "speed" and "0.25 to 4.0" in error["message"]


@pytest.mark.parametrize(
    "method, path, status",
    [
        ("GET", "/v1/audio/transcriptions", 404),
        ("GET", "/nowhere/%01", 404),  # a control character, escaped in the reason
        ("GET", "/v1/audio/speech", 405),
    ],
)
def test_a_path_or_method_the_server_does_not_have_is_refused_in_openais_error_shape(
    running, method, path, status
):
    answer = httpx.request(method, f"{running.http_url}{path}", timeout=30)

    assert answer.status_code == status
    error = answer.json()["error"]  # JSON, as every other refusal: an OpenAI client reads its reason
    assert error["type"] == "invalid_request_error" and error["message"].startswith(f"{method} '")
    assert "\x01" not in error["message"]  # the path is quoted with its control characters escaped
    if status == 405:
        assert answer.headers["allow"] == "POST"


def test_the_openai_client_reads_the_reason_of_a_missing_route(running):
    client = client_for(running)
    with pytest.raises(openai.NotFoundError, match="Not Found") as raised:
        client.audio.transcriptions.create(model="whisper-1", file=("a.wav", b"RIFF"))
    assert raised.value.body["message"] == "POST '/v1/audio/transcriptions': Not Found"


def test_a_request_head_over_16_kib_is_refused_even_when_it_arrives_whole(running):
    padding = {"X-Padding": "p" * 20_000}  # httpx sends the head in one write

    answer = httpx.get(f"{running.http_url}/v1/models", headers=padding, timeout=30)
    fits = httpx.get(f"{running.http_url}/v1/models", headers={"X-Padding": "p" * 8000}, timeout=30)

    assert answer.status_code == 431 and answer.json()["error"]["code"] == "too_large"
    assert fits.status_code == 200
