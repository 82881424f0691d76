"""Reading Wyoming events from hostile bytes: every malformed event is one BadEvent with a reason, never a
traceback, and every well-formed event reads exactly as the wyoming package's own reader reads it."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wyoming.event import Event, async_read_event, write_event

from qwen3tts.servers.wyoming_events import (
    BadEvent,
    EventTimeout,
    EventTooLarge,
    read_event,
    speakable,
)

MAX = 8192


def wire(event: Event) -> bytes:
    """An event as the wyoming package writes it (header line, data bytes, payload)."""
    out = io.BytesIO()
    write_event(event, out)
    return out.getvalue()


def header(fields: dict, body: bytes = b"") -> bytes:
    return json.dumps(fields).encode() + b"\n" + body


async def _read(raw: bytes, max_bytes: int = MAX, timeout_s: float = 5.0, eof: bool = True) -> Event:
    reader = asyncio.StreamReader(limit=max_bytes)
    reader.feed_data(raw)
    if eof:
        reader.feed_eof()
    first = await reader.read(1)
    return await read_event(reader, first, max_bytes, timeout_s)


def read(raw: bytes, **kwargs) -> Event:
    return asyncio.run(_read(raw, **kwargs))


def refused(raw: bytes, **kwargs) -> BadEvent:
    with pytest.raises(BadEvent) as caught:
        read(raw, **kwargs)
    return caught.value


def test_an_event_written_by_the_wyoming_package_reads_back_with_data_and_payload():
    event = Event(
        type="audio-chunk", data={"rate": 24000, "width": 2, "channels": 1}, payload=b"\x01\x02" * 50
    )
    assert read(wire(event)) == event


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (header({"data": {"text": "hi"}}), "needs a `type`"),  # issue 27 item 9: missing type
        (header({"type": 5}), "needs a `type`"),
        (header({"type": ""}), "needs a `type`"),
        (header({"type": "synthesize", "data_length": "5"}, b'{"a":1}'), "`data_length` must be a whole"),
        (header({"type": "synthesize", "data_length": True}, b"{}"), "`data_length` must be a whole"),
        (header({"type": "synthesize", "data_length": -1}), "`data_length` must be a whole"),
        (header({"type": "synthesize", "payload_length": 1.5}), "`payload_length` must be a whole"),
        (header({"type": "synthesize", "data": [1]}), "`data` must be an object, got list"),
        (header({"type": "synthesize", "data_length": 3}, b"[1]"), "event data must be a JSON object"),
        (header({"type": "synthesize", "data_length": 1}, b"5"), "event data must be a JSON object"),
        (b"[1]\n", "event header must be a JSON object"),
        (b"null\n", "event header must be a JSON object"),
        (b"not json at all\n", "event header is not JSON"),
        (b"\n", "event header is not JSON"),
        (b'{"type": "synthesize", "data": {"text": "\xff"}}\n', "event header is not UTF-8"),
        (b'{"type": "describe", "data": {"n": NaN}}\n', "is not JSON"),
        (b'{"type": "describe", "data": {"n": 1e999}}\n', "is not JSON"),
        (b'{"type": "describe", "data": {"n": ' + b"9" * 5000 + b"}}\n", "is not JSON"),
        (header({"type": "synthesize", "data": {"text": "a \ud800 b"}}), "lone surrogate at character 2"),
        (header({"type": "synthesize", "data": {"text": "a\x1b[31m"}}), "control character (U+001B"),
        (header({"type": "synthesize", "data": {"te\nxt": "a"}}), "key in data contains a control"),
        (header({"type": "synth\u0000esize"}), "event type contains a control character"),
    ],
)
def test_a_malformed_event_is_one_bad_event_naming_what_is_wrong(raw, reason):
    error = refused(raw)
    assert reason in str(error)
    assert error.code == "bad_event"


def test_line_breaks_and_tabs_are_text_in_values():
    event = read(header({"type": "synthesize", "data": {"text": "One.\nTwo.\tThree.\r\n"}}))
    assert event.data["text"] == "One.\nTwo.\tThree.\r\n"


@pytest.mark.parametrize("depth", [9, 100, 30_000])
def test_deep_nesting_is_refused_in_the_header_and_in_the_data_block(depth):
    nested = b"[" * depth + b"]" * depth
    in_header = b'{"type": "synthesize", "data": {"x": ' + nested + b"}}\n"
    body = b'{"x": ' + nested + b"}"
    in_data = header({"type": "synthesize", "data_length": len(body)}, body)
    for raw in (in_header, in_data):
        error = refused(raw, max_bytes=200_000)
        assert "nested deeper than 8 levels" in str(error)


def test_an_event_over_the_size_limit_is_refused_from_its_header_before_its_body_is_read():
    raw = header({"type": "synthesize", "data_length": MAX}) + b"x" * 10  # the body never comes
    error = refused(raw, eof=False)
    assert isinstance(error, EventTooLarge) and error.code == "too_large"
    long_line = b'{"type": "synthesize", "data": {"text": "' + b"a" * (2 * MAX) + b'"}}\n'
    assert isinstance(refused(long_line), EventTooLarge)


def test_an_event_that_stalls_after_its_first_byte_times_out():
    raw = b'{"type": "synth'  # no newline, no EOF: a slowloris header
    error = refused(raw, eof=False, timeout_s=0.2)
    assert isinstance(error, EventTimeout) and error.code == "timeout"
    body_missing = header({"type": "synthesize", "data_length": 20}, b'{"te')
    assert isinstance(refused(body_missing, eof=False, timeout_s=0.2), EventTimeout)


def test_eof_in_the_middle_of_the_data_block_is_an_incomplete_read_not_a_bad_event():
    with pytest.raises(asyncio.IncompleteReadError):
        read(header({"type": "synthesize", "data_length": 20}, b'{"te'))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Hello.", True), ("  \u200b\u200b ", False), ("\ufeff", False), ("\u200d\n\t", False), ("...", True),
     ("\u200bx", True), ("", False)],
)  # fmt: skip
def test_speakable_tells_invisible_text_from_text_with_something_to_say(text, expected):
    assert speakable(text) is expected


json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    event_type=st.sampled_from(["describe", "synthesize", "synthesize-chunk", "audio-chunk", "x-custom"]),
    data=st.dictionaries(st.text(max_size=10), json_values, max_size=4),
    payload=st.none() | st.binary(min_size=1, max_size=64),
)
def test_any_event_reads_like_the_wyoming_package_reads_it_or_is_one_bad_event(event_type, data, payload):
    raw = wire(Event(type=event_type, data=data, payload=payload))

    async def theirs() -> Event | None:
        reader = asyncio.StreamReader()
        reader.feed_data(raw)
        reader.feed_eof()
        return await async_read_event(reader)

    try:
        ours = read(raw, max_bytes=1 << 20)
    except BadEvent as exc:  # only for strings the MQTT door refuses too, or nesting past 8
        assert "surrogate" in str(exc) or "control character" in str(exc) or "nested" in str(exc)
        return
    assert ours == asyncio.run(theirs())
