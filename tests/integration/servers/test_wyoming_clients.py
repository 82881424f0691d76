"""What Home Assistant's Wyoming client does that a server must meet (issue 36 item 4), through the wyoming
package's own client: a streamed sentence is spoken once the language model pauses after it, the
pipeline's language travels in the voice's name, a request that finds the slots taken waits its turn,
and a ping is answered. The server is the real one over the real Engine on the fake runner."""

from __future__ import annotations

import asyncio

from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice
from wyoming_client import ask, error_of, until_eof

DEADLINE_S = 20.0


async def read_until(client: AsyncTcpClient, until: str) -> list[Event]:
    received = []
    async with asyncio.timeout(DEADLINE_S):
        while not received or received[-1].type != until:
            event = await client.read_event()
            assert event is not None, f"EOF after {[e.type for e in received]}"
            received.append(event)
    return received


def test_a_streamed_sentence_is_spoken_when_no_more_text_follows_it(fake_serve):
    """The language model stops after a sentence (a tool call, a slow token): the sentence is spoken
    after `servers.wyoming.sentence_wait_s`, not when the next one starts or the stream stops."""
    running = fake_serve("servers.wyoming.sentence_wait_s=0.2")

    async def converse() -> tuple[list[str], list[str]]:
        async with AsyncTcpClient("127.0.0.1", running.servers.wyoming_port) as client:
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="ryan")).event())
            await client.write_event(SynthesizeChunk(text="Let me check the ").event())
            await client.write_event(SynthesizeChunk(text="weather for you.").event())
            first = [e.type for e in await read_until(client, "audio-stop")]  # while the stream stays open
            await client.write_event(SynthesizeChunk(text="It is sunny.").event())
            await client.write_event(SynthesizeStop().event())
            rest = [e.type for e in await read_until(client, "synthesize-stopped")]
            return first, rest

    first, rest = asyncio.run(converse())
    assert first[0] == "audio-start" and "audio-chunk" in first
    assert rest.count("audio-start") == 1 and rest[-2:] == ["audio-stop", "synthesize-stopped"]
    assert [request.text for request in running.requests] == [
        "Let me check the weather for you.",
        "It is sunny.",
    ]


def test_the_pipeline_language_travels_with_a_named_voice(fake_serve):
    running = fake_serve()
    port = running.servers.wyoming_port
    [info] = asyncio.run(ask(port, [Describe().event()], "info"))
    [program] = Info.from_event(info).tts
    german = [voice.name for voice in program.voices if voice.languages == ["de"]]
    assert german == ["vivian@de", "ryan@de"]  # what Home Assistant offers a German pipeline
    requests = [
        Synthesize(text="Guten Morgen.", voice=SynthesizeVoice(name="ryan@de")).event(),  # Home Assistant
        Event("synthesize", {"text": "Guten Tag.", "voice": {"name": "vivian", "language": "de"}}),
        Synthesize(text="Good morning.", voice=SynthesizeVoice(name="ryan")).event(),  # the default language
    ]
    for event in requests:
        asyncio.run(ask(port, [event], "audio-stop"))
    spoken = [(request.speaker, request.language) for request in running.requests]
    assert spoken == [("ryan", "german"), ("vivian", "german"), ("ryan", "auto")]


def test_a_request_that_finds_every_slot_taken_waits_its_turn(fake_serve):
    running = fake_serve("servers.max_concurrent_requests=1", "servers.max_waiting_requests=1")
    port = running.servers.wyoming_port

    async def waiting() -> int:
        return running.servers.gateway.slots.waiting

    async def third_while_one_holds_and_one_waits():
        holder = await asyncio.open_connection("127.0.0.1", port)  # an open text stream holds the slot
        holder[1].write(b'{"type": "synthesize-start"}\n')
        while running.active() < 1:
            await asyncio.sleep(0.01)
        async with AsyncTcpClient("127.0.0.1", port) as second:
            await second.write_event(Synthesize(text="Hello there.").event())
            while running.servers.call(waiting(), timeout=5) < 1:  # read on the servers' loop
                await asyncio.sleep(0.01)
            refused, _ = await until_eof(
                port, [Synthesize(text="One too many.").event()]
            )  # the queue is full
            holder[1].write_eof()  # the holder leaves: its slot goes to the one waiting
            answer = [e.type for e in await read_until(second, "audio-stop")]
        holder[1].close()
        return refused, answer

    refused, answer = asyncio.run(third_while_one_holds_and_one_waits())
    error = error_of(refused)
    assert error.code == "busy" and "1 waiting" in error.text
    assert answer[0] == "audio-start" and "audio-chunk" in answer
    assert [request.text for request in running.requests] == ["Hello there."]
    assert running.outcomes("wyoming")["busy"] == 1 and running.outcomes("wyoming")["ok"] == 1


def test_a_ping_is_answered_with_a_pong(fake_serve):
    running = fake_serve()
    [pong] = asyncio.run(ask(running.servers.wyoming_port, [Ping(text="are you there").event()], "pong"))
    assert Pong.from_event(pong).text == "are you there"
