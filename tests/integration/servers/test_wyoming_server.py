"""The Wyoming server against the `wyoming` package's own async TCP client (what Home Assistant uses)."""

from __future__ import annotations

import asyncio

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)
from wyoming_client import error_of, until_eof

from qwen3tts.engine.sequence import SequenceStatus
from qwen3tts.synthesis import BACKGROUND_RANK

pytestmark = pytest.mark.slow


async def exchange(port: int, events: list[Event], until: str, limit: int = 500) -> list[Event]:
    """Send `events`, then read until an event of type `until` (included)."""
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as client:
        for event in events:
            await client.write_event(event)
        received = []
        while len(received) < limit:
            event = await client.read_event()
            assert event is not None, f"connection closed after {[e.type for e in received]}"
            received.append(event)
            if event.type == until:
                return received
    raise AssertionError(f"no {until} in {[e.type for e in received]}")


def test_describe_lists_the_bundles_voices_and_language_codes_with_streaming(serve):
    running = serve()
    [event] = asyncio.run(exchange(running.servers.wyoming_port, [Describe().event()], "info"))
    info = Info.from_event(event)
    [program] = info.tts
    assert program.supports_synthesize_streaming
    english = {voice.name for voice in program.voices if voice.languages == ["en"]}
    assert english == {f"{speaker}@en" for speaker in running.runtime.spec.speakers}
    assert {"en", "zh", "de"} <= {code for voice in program.voices for code in voice.languages}
    descriptions = {voice.name: voice.description for voice in program.voices}
    assert descriptions["aiden@de"] == "Aiden (English, 0.6B)"  # not "aiden (bundle-tiny)" (issue 28)


def test_synthesize_streams_audio_chunks_between_start_and_stop(serve):
    running = serve()
    synthesize = Synthesize(text="Hello from the appliance.", voice=SynthesizeVoice(name="vivian"))
    events = asyncio.run(exchange(running.servers.wyoming_port, [synthesize.event()], "audio-stop"))
    assert AudioStart.is_type(events[0].type) and AudioStop.is_type(events[-1].type)
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (24000, 2, 1)
    chunks = [AudioChunk.from_event(e) for e in events[1:-1]]
    assert len(chunks) >= 2  # streamed as produced: a 1-frame first chunk, then the rest
    assert all(AudioChunk.is_type(e.type) for e in events[1:-1])
    # every sample the engine produced arrives, as 16-bit mono
    [handle] = running.handles
    assert handle.status in (SequenceStatus.FINISHED_STOPPED, SequenceStatus.FINISHED_LENGTH)
    frames = len(handle.frames)
    assert sum(chunk.samples for chunk in chunks) == frames * 1920
    assert running.requests[0].rank == BACKGROUND_RANK  # below every announcement


def test_streaming_text_synthesises_each_complete_sentence_then_reports_stopped(serve):
    running = serve()
    voice = SynthesizeVoice(name="ryan")
    events = [
        SynthesizeStart(voice=voice).event(),
        SynthesizeChunk(text="The first sentence is complete now. The sec").event(),
        SynthesizeChunk(text="ond one arrives in pieces.").event(),
        # Home Assistant also sends the whole text for servers without streaming: ignored here
        Synthesize(text="The first sentence is complete now. The second one arrives in pieces.").event(),
        SynthesizeStop().event(),
    ]
    received = asyncio.run(exchange(running.servers.wyoming_port, events, "synthesize-stopped"))
    types = [e.type for e in received]
    assert SynthesizeStopped.is_type(types[-1])
    assert types.count("audio-start") == 2 and types.count("audio-stop") == 2
    texts = [request.text for request in running.requests]
    assert texts == ["The first sentence is complete now.", "The second one arrives in pieces."]
    assert {request.speaker for request in running.requests} == {"ryan"}


def test_an_unknown_voice_is_one_error_then_eof_at_once_as_home_assistant_needs(serve):
    running = serve()
    bad = Synthesize(text="Hello there.", voice=SynthesizeVoice(name="alloy")).event()
    received, to_eof = asyncio.run(until_eof(running.servers.wyoming_port, [bad, Describe().event()]))
    error = error_of(received)  # the describe after it is never answered: the connection has ended
    assert "unknown voice 'alloy'" in error.text and error.code == "RequestError"
    assert to_eof < 5.0  # ended after the error, not by the idle timeout (30 s), however loaded the machine
    assert running.handles == []
    assert running.outcomes("wyoming")["rejected"] == 1  # counted like an HTTP refusal


def test_an_event_over_the_size_limit_is_refused_before_its_body_is_read(serve):
    running = serve("servers.max_body_bytes=2048")
    huge = Synthesize(text="word " * 1000).event()
    [event] = asyncio.run(exchange(running.servers.wyoming_port, [huge], "error"))
    assert Error.from_event(event).code == "too_large"
    assert running.handles == []


def test_a_client_that_disconnects_mid_synthesis_cancels_its_engine_request(serve):
    running = serve("engine.max_frames=2048")
    running.without_end = True  # still synthesising when it is cut off
    text = "This sentence is long enough to keep the tiny model busy for many seconds, " * 2

    async def listen_then_hang_up() -> None:
        async with AsyncTcpClient("127.0.0.1", running.servers.wyoming_port, read_timeout=60) as client:
            await client.write_event(Synthesize(text=text.strip()).event())
            assert AudioStart.is_type((await client.read_event()).type)
            assert AudioChunk.is_type((await client.read_event()).type)

    asyncio.run(listen_then_hang_up())
    [handle] = running.handles
    assert handle.wait(30), "the engine request was not ended after the client left"
    assert handle.status is SequenceStatus.FINISHED_CANCELLED
    assert running.outcomes("wyoming")["cancelled"] == 1


def test_a_client_that_hangs_up_ends_every_request_it_opened_not_only_the_one_playing(serve):
    running = serve("engine.max_frames=2048")
    running.without_end = True  # still synthesising when it is cut off
    text = "This sentence is long enough to keep the tiny model busy for many seconds, " * 2

    async def ask_twice_then_hang_up() -> None:
        async with AsyncTcpClient("127.0.0.1", running.servers.wyoming_port, read_timeout=60) as client:
            for _ in range(2):  # both are opened (and submitted) at once; the second waits to be spoken
                await client.write_event(Synthesize(text=text.strip()).event())
            assert AudioStart.is_type((await client.read_event()).type)
            assert AudioChunk.is_type((await client.read_event()).type)

    asyncio.run(ask_twice_then_hang_up())
    assert len(running.handles) == 2
    for handle in running.handles:
        assert handle.wait(30), "an engine request outlived its client"
        assert handle.status is SequenceStatus.FINISHED_CANCELLED

    async def open_streams() -> int:  # runs on the servers' loop, after the closes that cancelled them
        return len(running.servers.gateway.streams)

    assert running.servers.call(open_streams(), timeout=10) == 0


def test_an_unexpected_failure_is_answered_logged_and_closes_only_that_connection(serve, monkeypatch, caplog):
    from qwen3tts.servers.speech_stream import SpeechStream

    running = serve()
    running.without_end = True  # still synthesising when it is cut off

    def broken(self):
        raise LookupError("injected")

    monkeypatch.setattr(SpeechStream, "pcm", broken)

    async def synthesize_until_closed() -> list[Event]:
        async with AsyncTcpClient("127.0.0.1", running.servers.wyoming_port, read_timeout=60) as client:
            await client.write_event(Synthesize(text="Hello there.").event())
            received = []
            while (event := await client.read_event()) is not None:
                received.append(event)
            return received

    received = asyncio.run(synthesize_until_closed())
    assert [e.type for e in received] == ["audio-start", "error"]
    assert Error.from_event(received[-1]).code == "LookupError"
    assert "wyoming: work for" in caplog.text and "LookupError: injected" in caplog.text
    [handle] = running.handles
    assert handle.wait(30) and handle.status is SequenceStatus.FINISHED_CANCELLED
    [event] = asyncio.run(exchange(running.servers.wyoming_port, [Describe().event()], "info"))
    assert Info.from_event(event).tts  # the server goes on
