"""Network requests -> the real Engine on the fake runner: slots, validation, priority, cancellation."""

import asyncio

import numpy as np
import pytest
from engine_fakes import SAMPLES_PER_FRAME, FakeRunner, fake_prompt_builder

from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Priority, SequenceStatus
from qwen3tts.errors import RequestError
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.synthesis import Busy, SpeechJob, Synthesizer
from qwen3tts.servers.voices import BundleInfo

BUNDLE = BundleInfo("fake", ("vivian", "ryan"), ("english",), sample_rate=SAMPLES_PER_FRAME * 12)


@pytest.fixture
def synth():
    engine = Engine(
        FakeRunner(eos_at=1000), fake_prompt_builder(), EngineConfig(first_chunk_frames=1, chunk_frames=2)
    )
    submitted, handles = [], []
    submit = engine.submit

    def recording_submit(request):
        handles.append(submit(request))
        submitted.append(request)
        return handles[-1]

    engine.submit = recording_submit
    engine.start()
    synth = Synthesizer(
        engine, BUNDLE, ServerMetrics(engine), max_concurrent=2, max_text_chars=200, max_frames=40
    )
    synth.submitted, synth.handles = submitted, handles
    yield synth
    synth.shutdown()
    engine.stop()


def collect(stream) -> np.ndarray:
    async def run():
        return [chunk async for chunk in stream.pcm()]

    return np.concatenate(asyncio.run(run()))


def test_sentences_go_to_the_engine_one_at_a_time_below_every_announcement(synth):
    stream = synth.open(synth.job("First sentence here. And the second one.", "Ryan", "en", None), "http")
    assert len(synth.submitted) == 1  # the first sentence is submitted at open, the next when it ends
    pcm = collect(stream)
    stream.close()
    assert [r.text for r in synth.submitted] == ["First sentence here.", "And the second one."]
    assert {(r.speaker, r.language, r.priority) for r in synth.submitted} == {
        ("ryan", "english", Priority.BACKGROUND)
    }
    assert pcm.size > 0 and stream.outcome == "ok"


def test_bad_input_is_refused_before_the_engine_sees_it(synth):
    for text, voice, language in [
        ("", None, None),
        ("x" * 201, None, None),
        ("Hi.", "alloy", None),
        ("Hi.", None, "xx"),
    ]:
        with pytest.raises(RequestError):
            synth.job(text, voice, language, None)
    assert synth.submitted == []


def test_one_request_more_than_the_slots_is_busy_and_a_closed_one_frees_its_slot(synth):
    job = synth.job("A sentence that runs for a while.", None, None, None)
    first, second = synth.open(job, "http"), synth.open(job, "wyoming")
    with pytest.raises(Busy):
        synth.open(job, "http")
    first.close()
    synth.open(job, "http").close()
    second.close()
    assert synth.streams == set()


def test_closing_a_stream_cancels_its_engine_request_at_once(synth):
    stream = synth.open(synth.job("A sentence that runs for a while.", None, None, None), "http")
    stream.close()
    [handle] = synth.handles
    assert handle.wait(5) and handle.status is SequenceStatus.FINISHED_CANCELLED
    assert stream.outcome == "cancelled" and synth.streams == set()


def test_a_request_the_engine_refuses_at_submit_frees_its_slot(synth):
    job = SpeechJob("Hi there.", "nobody", "auto", None)  # the fake prompt builder rejects this speaker
    with pytest.raises(RequestError, match="unknown speaker"):
        synth.open(job, "http")
    assert synth.streams == set()
    counted = synth.metrics.registry.get_sample_value(
        "qwen3tts_network_requests_total", {"server": "http", "outcome": "rejected"}
    )
    assert counted == 1


def test_a_registered_voice_reaches_the_engine_as_its_reference_key_never_as_a_path(synth):
    from dataclasses import replace

    from qwen3tts.voices.registered import RegisteredVoices, VoiceChoice

    synth.bundle = replace(BUNDLE, registered=RegisteredVoices({"anna": VoiceChoice(ref_audio="voice:anna")}))
    stream = synth.open(synth.job("Hello there.", "Anna", "en", None), "wyoming")
    assert collect(stream).size > 0
    stream.close()
    assert [(r.speaker, r.ref_audio) for r in synth.submitted] == [(None, "voice:anna")]
    with pytest.raises(RequestError, match="unknown voice"):
        synth.job("Hello there.", "/etc/passwd", "en", None)
