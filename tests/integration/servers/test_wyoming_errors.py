"""Every Wyoming error ends the connection: one `error` event, then EOF within a second, seen through the
wyoming package's client (issue 28 item 2), and whatever the request held is released (the active
gauge back at 0, issue 27 item 1). The server is the real one over the real Engine on the fake runner."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket

import pytest
from wyoming.audio import AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice
from wyoming_client import ask, error_of, raw_until_eof, until_eof

EOF_WITHIN_S = 5.0
"""A connection the server ends does so at once; what would end it otherwise is the idle timeout (30 s
by default and in these tests), so 5 s tells the two apart on a loaded 2-core machine too."""


def raw(header: dict, body: bytes = b"") -> bytes:
    return json.dumps(header).encode() + b"\n" + body


EVENT_CASES = {
    "unknown voice": ([Synthesize(text="Hello.", voice=SynthesizeVoice(name="alloy")).event()],
                      "RequestError", "unknown voice 'alloy'"),
    "unknown language": ([Synthesize(text="Hello.", voice=SynthesizeVoice(language="klingon")).event()],
                         "RequestError", "klingon"),
    "text over the limit": ([Synthesize(text="word " * 100).event()], "RequestError", "text too long"),
    "empty text": ([Synthesize(text="   ").event()], "RequestError", "empty text"),
    "zero-width text": ([Synthesize(text="\u200b\u200b\ufeff").event()], "RequestError", "nothing to speak"),
    "control character": ([Synthesize(text="a \x1b[2J b").event()], "bad_event", "control character"),
    "voice name not a string": ([Event("synthesize", {"text": "Hi.", "voice": {"name": 42}})],
                                "bad_event", "must be strings"),
    "no text field": ([Event("synthesize", {"txt": "Hi."})], "bad_event", "synthesize event without `text`"),
    "voice not an object": ([Event("synthesize", {"text": "Hi.", "voice": "ryan"})], "bad_event",
                            "`voice` must be an object"),
    "unknown event type": ([Event("transcribe", {"language": "en"})], "unexpected_event", "'transcribe'"),
    "audio from the client": ([AudioStart(rate=16000, width=2, channels=1).event()], "unexpected_event",
                              "'audio-start'"),
    "chunk without a start": ([SynthesizeChunk(text="Hello.").event()], "unexpected_event",
                              "synthesize-chunk without synthesize-start"),
    "stop without a start": ([SynthesizeStop().event()], "unexpected_event",
                             "synthesize-stop without synthesize-start"),
    "a second start": ([SynthesizeStart().event(), SynthesizeStart().event()], "unexpected_event",
                       "send synthesize-stop first"),
    "chunk text not a string": ([SynthesizeStart().event(), Event("synthesize-chunk", {"text": [1]})],
                                "bad_event", "text must be a string"),
    "streamed text over the limit": ([SynthesizeStart().event(), SynthesizeChunk(text="word " * 100).event()],
                                     "RequestError", "streamed text too long"),
}  # fmt: skip

RAW_CASES = {  # bytes the wyoming client cannot write (issue 27 items 1 and 9)
    "surrogate in synthesize": (b'{"type": "synthesize", "data": {"text": "a \\ud800 b"}}\n', "surrogate"),
    "surrogate in a streamed chunk": (
        raw({"type": "synthesize-start"}) + b'{"type": "synthesize-chunk", "data": {"text": "\\ud800"}}\n',
        "surrogate",
    ),
    "missing type": (raw({"data": {"text": "Hi."}}), "needs a `type`"),
    "data_length a string": (raw({"type": "synthesize", "data_length": "5"}, b'{"a":1}'), "data_length"),
    "deep nesting": (b'{"type": "synthesize", "data": {"x": ' + b"[" * 30000 + b"]" * 30000 + b"}}\n", ""),
    "data a list": (raw({"type": "synthesize", "data": [1]}), "must be an object"),
    "not JSON": (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "not JSON"),
}


@pytest.mark.parametrize("case", list(EVENT_CASES))
def test_a_refused_request_is_one_error_then_eof_within_a_second(fake_serve, case):
    running = fake_serve("engine.max_text_chars=200", "servers.max_body_bytes=200000")
    events, code, text = EVENT_CASES[case]
    received, to_eof = asyncio.run(until_eof(running.servers.wyoming_port, events))
    error = error_of(received)
    assert error.code == code and text in error.text, error
    assert to_eof < EOF_WITHIN_S
    assert running.active() == 0
    assert running.handles == []  # refused before any engine work


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_a_malformed_event_is_one_bad_event_error_then_eof_and_no_traceback(fake_serve, case, caplog):
    running = fake_serve("servers.max_body_bytes=200000")
    data, text = RAW_CASES[case]
    received, to_eof = asyncio.run(raw_until_eof(running.servers.wyoming_port, data))
    error = error_of(received)
    assert error.code == "bad_event" and text in error.text, error
    assert to_eof < EOF_WITHIN_S
    assert running.active() == 0
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.exc_info]


def test_an_event_over_the_size_limit_is_too_large_then_eof(fake_serve):
    running = fake_serve("servers.max_body_bytes=2048")
    received, to_eof = asyncio.run(
        until_eof(running.servers.wyoming_port, [Synthesize(text="w " * 2000).event()])
    )
    assert error_of(received).code == "too_large" and to_eof < EOF_WITHIN_S


def test_busy_is_answered_at_once_then_eof_and_the_slots_come_back(fake_serve):
    running = fake_serve("servers.max_concurrent_requests=2", "servers.max_waiting_requests=0")
    port = running.servers.wyoming_port

    async def third_while_two_streams_are_open():
        holders = []
        for _ in range(2):  # two open text streams hold both slots without engine work
            holders.append(await asyncio.open_connection("127.0.0.1", port))
            holders[-1][1].write(raw({"type": "synthesize-start"}))
        while running.active() < 2:
            await asyncio.sleep(0.01)
        received, to_eof = await until_eof(port, [Synthesize(text="Hello there.").event()])
        for reader, writer in holders:  # leave, and wait for the server's close: the slots are free then
            writer.write_eof()
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
        return received, to_eof

    received, to_eof = asyncio.run(third_while_two_streams_are_open())
    error = error_of(received)
    assert error.code == "busy" and to_eof < EOF_WITHIN_S
    assert running.outcomes("wyoming")["busy"] == 1
    received = asyncio.run(ask(port, [Synthesize(text="Hello there.").event()], "audio-stop"))
    assert AudioStart.is_type(received[0].type)  # the holders' slots were released when they left
    assert running.active() == 0


def test_a_good_request_ends_with_audio_stop_and_the_connection_stays_open_for_the_next(fake_serve):
    running = fake_serve()
    events = [Synthesize(text="Hello there.").event(), Describe().event()]
    types = [e.type for e in asyncio.run(ask(running.servers.wyoming_port, events, "info"))]
    assert types[0] == "audio-start" and types[-2:] == ["audio-stop", "info"]
    assert running.active() == 0


def test_connections_over_the_caps_get_too_many_connections_then_eof(fake_serve):
    running = fake_serve("servers.max_connections=3", "servers.max_connections_per_client=2")
    port = running.servers.wyoming_port

    async def open_three():
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        received, to_eof = await until_eof(port, [])  # the third from the same address
        for sock in held:  # leave, and wait for the server's close: their slots are free then
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(5)
            assert sock.recv(100) == b""
            sock.close()
        return received, to_eof

    received, to_eof = asyncio.run(open_three())
    error = error_of(received)
    assert error.code == "too_many_connections" and "2 connections from 127.0.0.1" in error.text
    assert to_eof < EOF_WITHIN_S
    assert asyncio.run(ask(port, [Describe().event()], "info"))  # the held ones left: served again


def test_an_idle_connection_and_an_idle_text_stream_end_with_timeout(fake_serve):
    running = fake_serve("servers.idle_timeout_s=0.5")
    port = running.servers.wyoming_port
    for events in ([], [SynthesizeStart().event()]):
        received, to_eof = asyncio.run(until_eof(port, events))
        error = error_of(received)
        assert error.code == "timeout" and "no event for 0.5 s" in error.text
        assert 0.4 < to_eof < 0.5 + EOF_WITHIN_S
    assert running.active() == 0


def test_a_slowloris_event_ends_with_timeout_after_the_read_timeout(fake_serve):
    running = fake_serve("servers.read_timeout_s=0.5", "servers.idle_timeout_s=30")
    received, to_eof = asyncio.run(raw_until_eof(running.servers.wyoming_port, b'{"type": "descr'))
    error = error_of(received)
    assert error.code == "timeout" and "not complete within 0.5 s" in error.text
    assert to_eof < 0.5 + EOF_WITHIN_S


def test_a_text_stream_that_keeps_chunking_cannot_hold_its_slot_past_max_request_s(fake_serve):
    running = fake_serve("servers.max_request_s=1.0", "servers.idle_timeout_s=30")
    port = running.servers.wyoming_port

    async def trickle():
        loop = asyncio.get_running_loop()
        start = loop.time()  # before the server can start its clock: the connection, or the first event
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(SynthesizeStart().event())

            async def keep_chunking():  # never idle, never a full sentence
                with contextlib.suppress(ConnectionError):
                    while True:
                        await client.write_event(SynthesizeChunk(text="and ").event())
                        await asyncio.sleep(0.2)

            chunking = asyncio.create_task(keep_chunking())
            received = []
            while (event := await asyncio.wait_for(client.read_event(), 5)) is not None:
                received.append(event)
            chunking.cancel()
            return received, loop.time() - start

    received, elapsed = asyncio.run(trickle())
    error = error_of(received)
    assert error.code == "timeout" and "servers.max_request_s" in error.text
    assert 1.0 <= elapsed < 1.0 + EOF_WITHIN_S
    assert running.outcomes("wyoming")["timeout"] == 1 and running.active() == 0


def test_a_client_that_never_reads_is_dropped_after_the_write_timeout_and_its_request_cancelled(fake_serve):
    running = fake_serve("servers.write_timeout_s=0.5", "servers.idle_timeout_s=30", "engine.max_frames=4000",
                         frames=4000)  # fmt: skip
    port = running.servers.wyoming_port
    text = "This sentence goes on and on for the client that does not listen, " * 4  # ~25 s of audio

    async def never_read():
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(json.dumps({"type": "synthesize", "data": {"text": text}}).encode() + b"\n")
        loop = asyncio.get_running_loop()
        while running.active() == 0:  # the request is open ...
            await asyncio.sleep(0.01)
        start = loop.time()
        while running.active() > 0 and loop.time() - start < 30:  # ... until the server drops the client
            await asyncio.sleep(0.05)
        sock.close()
        return loop.time() - start

    held_s = asyncio.run(never_read())
    assert running.active() == 0 and held_s < 30
    assert running.outcomes("wyoming")["cancelled"] == 1 and running.outcomes("wyoming")["ok"] == 0
    assert running.wait_idle(10)  # nothing of it is synthesised any more
    assert asyncio.run(ask(port, [Describe().event()], "info"))  # the server goes on
