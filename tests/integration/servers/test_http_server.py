"""The OpenAI-compatible HTTP API against the official `openai` client and plain httpx, on loopback."""

from __future__ import annotations

import io
import threading
import wave

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from qwen3tts.appliance.priority import Priority
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.servers import ApplianceFigures
from qwen3tts.synthesis import BACKGROUND_RANK

pytestmark = pytest.mark.slow
LONG = "This sentence is long enough to keep the tiny model busy for quite a few seconds, really. "


def client_for(running, api_key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.http_url}/v1", api_key=api_key, max_retries=0)


def test_the_openai_client_streams_pcm_as_it_is_produced(serve):
    running = serve()
    parts = []
    with client_for(running).audio.speech.with_streaming_response.create(
        model="qwen3tts", voice="vivian", input="Hello from the appliance.", response_format="pcm"
    ) as response:
        assert response.headers["content-type"] == "audio/pcm"
        parts = list(response.iter_bytes())
    pcm = b"".join(parts)
    [handle] = running.handles
    assert handle.status in (SequenceStatus.FINISHED_STOPPED, SequenceStatus.FINISHED_LENGTH)
    assert len(pcm) == len(handle.frames) * 1920 * 2  # 16-bit samples, 1920 per 80 ms frame
    assert running.requests[0].speaker == "vivian"
    assert running.requests[0].rank == BACKGROUND_RANK


def test_a_wav_reader_reads_the_streamed_wav(serve):
    running = serve()
    body = {"input": "Good morning.", "voice": "ryan", "response_format": "wav"}
    response = httpx.post(f"{running.http_url}/v1/audio/speech", json=body, timeout=60)
    assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(response.content)) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (24000, 2, 1)
        samples = wav.readframes(10**7)
    assert len(samples) == len(running.handles[0].frames) * 1920 * 2


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "Hi there.", "speed": 4.5}, "speed"),
        ({"input": "Hi there.", "speed": "fast"}, "speed"),
        ({"input": "Hi there.", "response_format": "ogg"}, "response_format"),
        ({"input": "Hi there.", "voice": "nobody"}, "voice"),
        ({"input": "Hi there.", "language": "klingon"}, "language"),
        ({"input": "   "}, "input"),
    ],
)
def test_requests_it_cannot_honour_get_a_400_naming_the_parameter(serve_once, body, param):
    response = httpx.post(f"{serve_once.http_url}/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert serve_once.handles == []


def test_the_openai_client_sees_a_bad_request_error(serve_once):
    with pytest.raises(openai.BadRequestError, match="speed"):
        client_for(serve_once).audio.speech.create(model="tts-1", voice="vivian", input="Hi.", speed=5.0)


@pytest.mark.parametrize(
    ("body", "allowed"),
    [
        ({"input": "Hi.", "response_format": "ogg"}, "mp3, opus, aac, flac, wav, pcm"),
        ({"input": "Hi.", "voice": "nobody"}, "vivian"),
        ({"input": "Hi.", "voice": "nobody"}, "shimmer"),
    ],
)
def test_an_unknown_format_or_voice_names_the_allowed_values(serve_once, body, allowed):
    response = httpx.post(f"{serve_once.http_url}/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 400 and allowed in response.json()["error"]["message"]


def test_a_body_over_the_limit_gets_413(serve):
    running = serve("servers.max_body_bytes=2048")
    response = httpx.post(f"{running.http_url}/v1/audio/speech", json={"input": "word " * 1000}, timeout=30)
    assert response.status_code == 413
    assert running.handles == []


def test_voices_healthz_and_metrics(serve):
    figures = ApplianceFigures(queue_depth=3, underflows=2, thermal_level=1, rejected=4, failed=1)
    running = serve(metrics_source=lambda: figures)
    voices = httpx.get(f"{running.http_url}/v1/voices").json()
    assert {v["id"] for v in voices["voices"]} == set(running.runtime.spec.speakers)
    assert "english" in voices["languages"] and "en" in voices["language_codes"]
    assert httpx.get(f"{running.http_url}/healthz").json() == {"status": "ready", "reasons": []}
    text = httpx.get(f"{running.http_url}/metrics").text
    values = {
        s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if not s.labels
    }
    assert values["qwen3tts_queue_depth"] == 3
    assert values["qwen3tts_audio_underflows_total"] == 2
    assert values["qwen3tts_thermal_level"] == 1
    assert values["qwen3tts_announcements_rejected_total"] == 4
    assert values["qwen3tts_engine_max_batch"] == running.settings.engine.max_num_seqs


def test_healthz_reports_degraded_with_the_reasons(serve):
    running = serve(metrics_source=lambda: ApplianceFigures(degraded=("audio sink lost",)))
    assert httpx.get(f"{running.http_url}/healthz").json() == {
        "status": "degraded",
        "reasons": ["audio sink lost"],
    }


def test_with_a_token_every_route_needs_the_bearer(serve, tmp_path):
    (tmp_path / "http-token").write_text("s3cret-token\n")
    running = serve(environ={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-token"}):
        assert httpx.get(f"{running.http_url}/v1/voices", headers=headers).status_code == 401
    with pytest.raises(openai.AuthenticationError):
        client_for(running, api_key="wrong").audio.speech.create(model="m", voice="vivian", input="Hi.")
    assert running.handles == []
    assert running.outcomes("http")["unauthorized"] == 4
    ok = httpx.get(f"{running.http_url}/v1/voices", headers={"Authorization": "Bearer s3cret-token"})
    assert ok.status_code == 200
    response = client_for(running, api_key="s3cret-token").audio.speech.create(
        model="m", voice="vivian", input="Hello.", response_format="pcm"
    )
    assert len(response.content) > 0


def test_a_client_that_disconnects_cancels_its_engine_request(serve):
    running = serve("engine.max_frames=2048")
    running.without_end = True  # still synthesising when the client hangs up
    with httpx.stream("POST", f"{running.http_url}/v1/audio/speech",
                      json={"input": LONG, "response_format": "pcm"}, timeout=60) as response:  # fmt: skip
        next(response.iter_raw())  # audio is flowing; now hang up
    [handle] = running.handles
    assert handle.wait(30), "the engine request was not ended after the client left"
    assert handle.status is SequenceStatus.FINISHED_CANCELLED
    assert running.outcomes("http")["cancelled"] == 1


def test_more_concurrent_requests_than_allowed_get_429(serve):
    running = serve("engine.max_frames=2048", "servers.max_concurrent_requests=1")
    with httpx.stream("POST", f"{running.http_url}/v1/audio/speech",
                      json={"input": LONG, "response_format": "pcm"}, timeout=60) as response:  # fmt: skip
        chunks = response.iter_raw()  # kept: a dropped iterator closes the connection (a disconnect)
        next(chunks)
        second = httpx.post(f"{running.http_url}/v1/audio/speech", json={"input": "Me too."}, timeout=30)
    assert second.status_code == 429 and second.json()["error"]["code"] == "busy"
    assert len(running.handles) == 1


def test_http_and_announcement_requests_batch_in_one_engine(serve):
    running = serve("engine.max_frames=2048")
    running.without_end = True  # each runs to its frame budget: the network one's ~250 frames, then 40
    started, joined = held_until_the_announcement_joins(running)
    body = {"input": LONG, "voice": "vivian", "response_format": "pcm"}
    pcm = []
    http = threading.Thread(target=lambda: pcm.append(
        httpx.post(f"{running.http_url}/v1/audio/speech", json=body, timeout=120).content))  # fmt: skip
    http.start()
    assert started.wait(60), "the network request never reached the engine"
    announcement = running.engine.submit(
        Request(id="ann-1", text="Attention please, the store closes soon.", language="english",
                speaker="serena", rank=Priority.NORMAL.rank, max_frames=40)
    )  # fmt: skip
    joined.set()
    announcement.result(60)
    http.join(120)
    stats = running.engine.stats()
    assert pcm and pcm[0] and stats.num_frames > stats.num_steps  # mean batch > 1: some steps ran both


def held_until_the_announcement_joins(running) -> tuple[threading.Event, threading.Event]:
    """The engine's steps wait, once the network request was submitted, until the test sets `joined`: the
    announcement is then in the engine beside it, however slow the machine (before, a loaded one ran the
    whole network request before the test had submitted the announcement: issue 35)."""
    started, joined = threading.Event(), threading.Event()
    step = running.engine.step

    def held_step() -> bool:
        if running.handles and not joined.is_set():
            started.set()
            joined.wait(60)
        return step()

    running.engine.step = held_step  # the engine's loop calls self.step()
    return started, joined


def test_an_emergency_preempts_network_synthesis(serve):
    running = serve("engine.max_frames=2048", "engine.max_num_seqs=1")
    finished_order = []
    with httpx.stream("POST", f"{running.http_url}/v1/audio/speech",
                      json={"input": LONG, "response_format": "pcm"}, timeout=120) as response:  # fmt: skip
        chunks = response.iter_raw()
        next(chunks)  # the network request runs in the only slot
        emergency = running.engine.submit(
            Request(id="fire", text="Fire alarm.", language="english", speaker="ryan",
                    rank=Priority.EMERGENCY.rank, urgent=True, max_frames=10)
        )  # fmt: skip
        done = threading.Thread(target=lambda: (emergency.wait(60), finished_order.append("emergency")))
        done.start()
        rest = b"".join(chunks)
        finished_order.append("network")
        done.join(60)
    assert emergency.status is SequenceStatus.FINISHED_LENGTH
    assert running.engine.stats().num_preemptions >= 1
    assert finished_order == ["emergency", "network"]
    assert rest  # the network request resumed after the emergency and finished its audio
