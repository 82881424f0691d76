"""Network requests -> the real Engine on the fake runner: slots, validation, priority, cancellation."""

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest
from engine_fakes import SAMPLES_PER_FRAME, FakeRunner, fake_prompt_builder

from qwen3tts.appliance.priority import ANNOUNCEMENT_LEVELS
from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import SequenceStatus
from qwen3tts.errors import RequestError
from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.http_speech import VoiceMap, open_speech
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.refusals import Busy, InvalidField
from qwen3tts.settings import VoiceSettings
from qwen3tts.synthesis import BACKGROUND_RANK
from qwen3tts.voices.catalog import VoiceCatalog, VoiceChoice

# "nobody" passes the catalog but the fake prompt builder refuses it, like the engine refusing at submit
SPEC = SimpleNamespace(speakers=("vivian", "ryan", "nobody"), languages=("english", "german"))


@pytest.fixture
def gateway():
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
    defaults = Offer.from_spec("fake", SPEC, VoiceSettings()).defaults
    offer = Offer("fake", VoiceCatalog(SPEC.speakers, SPEC.languages), defaults, SAMPLES_PER_FRAME * 12)
    gateway = Gateway(
        engine, offer, ServerMetrics(engine), max_concurrent=2, max_text_chars=200, max_frames=40
    )
    gateway.submitted, gateway.handles = submitted, handles
    yield gateway
    gateway.shutdown()
    engine.stop()


def collect(stream) -> np.ndarray:
    async def run():
        return [chunk async for chunk in stream.pcm()]

    return np.concatenate(asyncio.run(run()))


def outcome_count(gateway, server: str, outcome: str) -> float:
    labels = {"server": server, "outcome": outcome}
    return gateway.metrics.registry.get_sample_value("qwen3tts_network_requests_total", labels)


def test_pieces_go_to_the_engine_one_at_a_time_below_every_announcement(gateway):
    stream = gateway.open("http", "First sentence here. And the second one.", "Ryan", "en")
    assert len(gateway.submitted) == 1  # the first piece is submitted at open, the next when it ends
    pcm = collect(stream)
    stream.close()
    assert [r.text for r in gateway.submitted] == ["First sentence here.", "And the second one."]
    assert {(r.speaker, r.language, r.rank, r.urgent) for r in gateway.submitted} == {
        ("ryan", "english", BACKGROUND_RANK, False)
    }
    assert min(level.rank for level in ANNOUNCEMENT_LEVELS) > BACKGROUND_RANK
    assert pcm.size > 0 and stream.outcome == "ok"
    assert outcome_count(gateway, "http", "ok") == 1


@pytest.mark.parametrize(("response_format", "first"), [("aac", 2), ("mp3", None), ("pcm", None)])
def test_an_http_response_asks_the_engine_for_the_first_chunk_its_encoder_needs(
    gateway, response_format, first
):
    body = {"input": "First sentence here. And the second one.", "response_format": response_format}
    order = open_speech(gateway, VoiceMap({}), body)
    pcm = collect(order.stream)
    order.stream.close()
    assert [r.first_chunk_frames for r in gateway.submitted] == [first, first]  # every piece of the stream
    calls = gateway.engine.runner.codec_calls  # (seq_id, frames) per codec call, in order
    firsts = [next(n for seq_id, n in calls if seq_id == h.seq_id) for h in gateway.handles]
    assert pcm.size > 0 and firsts == [first or 1] * 2  # the engine's default here is 1


@pytest.mark.parametrize(
    ("text", "voice", "language", "field"),
    [("", None, None, "text"), (None, None, None, "text"), ("x" * 201, None, None, "text"),
     ("Hi.", "alloy", None, "voice"), ("Hi.", None, "xx", "language"), ("Hi.", None, "fr", "language")],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_field_before_the_engine_sees_it(
    gateway, text, voice, language, field
):
    with pytest.raises(InvalidField) as refused:
        gateway.open("wyoming", text, voice, language)
    assert refused.value.field == field
    assert gateway.submitted == [] and gateway.streams == set()
    assert outcome_count(gateway, "wyoming", "rejected") == 1  # counted once, by the gateway, for both doors


def test_one_request_more_than_the_slots_is_busy_and_a_closed_one_frees_its_slot(gateway):
    text = "A sentence that runs for a while."
    first, second = gateway.open("http", text), gateway.open_stream("wyoming")
    with pytest.raises(Busy):
        gateway.open("http", text)
    first.close()
    gateway.open("http", text).close()
    second.close()
    assert gateway.streams == set() and outcome_count(gateway, "http", "busy") == 1


def test_closing_a_stream_cancels_its_engine_request_at_once(gateway):
    stream = gateway.open("http", "A sentence that runs for a while.")
    stream.close()
    [handle] = gateway.handles
    assert handle.wait(5) and handle.status is SequenceStatus.FINISHED_CANCELLED
    assert stream.outcome == "cancelled" and gateway.streams == set()


def test_closing_every_stream_at_shutdown_ends_a_stream_being_read(gateway):
    stream = gateway.open("http", "A long first sentence is running now. And a second one waits its turn.")

    async def read_then_shut_down():
        chunks = []
        async for chunk in stream.pcm():
            chunks.append(chunk)
            # the worst case, whatever the CPU's speed: the engine has already finished the sentence and
            # queued all its chunks, so there is nothing left to cancel there
            assert gateway.handles[0].wait(30)
            gateway.close_all()
        return chunks

    assert len(asyncio.run(read_then_shut_down())) == 1  # no more audio once closed from outside
    assert len(gateway.submitted) == 1 and stream.outcome == "cancelled"


def test_a_request_the_engine_refuses_at_submit_frees_its_slot_and_counts_once(gateway):
    with pytest.raises(RequestError, match="unknown speaker") as refused:
        gateway.open("http", "Hi there.", "nobody")
    assert not isinstance(refused.value, InvalidField)
    assert gateway.streams == set()
    assert outcome_count(gateway, "http", "rejected") == 1


def test_the_default_instruct_and_a_registered_voice_reach_the_engine_never_as_a_path(gateway):
    gateway.offer.catalog.set_registered({"Anna": VoiceChoice(ref_audio="voice:anna")}, {})
    stream = gateway.open("wyoming", "Hello there.", "anna", "en")
    assert collect(stream).size > 0
    stream.close()
    assert [(r.speaker, r.ref_audio) for r in gateway.submitted] == [(None, "voice:anna")]
    with pytest.raises(InvalidField, match="unknown voice"):
        gateway.open("wyoming", "Hello there.", "/etc/passwd", "en")
