"""One Wyoming event read from a hostile client: bounded in size, depth and time, every string checked.

The wire format is the wyoming package's: a JSON header line (`type`, optional `data`, `data_length`,
`payload_length`, `version`), then `data_length` bytes of a JSON object merged into `data`, then
`payload_length` bytes of payload. The package's reader trusts every part of it (a header without
`type` is a KeyError, `"data_length": "5"` a TypeError, data `[1]` a TypeError, deep nesting a
RecursionError), so events are read and checked here and only then built as the package's `Event`.

Text checks (issue 27 item 1): every string, keys included, must be Unicode scalar text without
control characters (line breaks and tabs allowed in values), as MQTT payloads must; `speakable()`
tells text with something to say from white space and invisible format characters. These two
functions stand in for the text checks the doors will share (servers may not import the MQTT
door's payload.py).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from wyoming.event import Event

from qwen3tts.servers.wyoming_info import split_voice_id
from qwen3tts.text import checks

MAX_DEPTH = 8
"""Deepest nesting in an event's data (Wyoming's own events nest 2 deep: data.voice.name)."""
MAX_TYPE_CHARS = 64


class BadEvent(Exception):
    """An event the server cannot read; answered with an error event of this code, then the close."""

    code = "bad_event"


class EventTooLarge(BadEvent):
    code = "too_large"


class EventTimeout(BadEvent):
    """An event that did not arrive completely within the read timeout (a slow or stalled client)."""

    code = "timeout"


class UnexpectedEvent(BadEvent):
    """A well-formed event this server does not take at this point (an unknown type, a chunk without a
    start): answered, never passed over, so a client cannot wait for an answer that will not come."""

    code = "unexpected_event"


async def read_event(reader: asyncio.StreamReader, first: bytes, max_bytes: int, timeout_s: float) -> Event:
    """The event whose first byte is `first`; the rest must arrive within `timeout_s`.

    BadEvent (or EventTooLarge, EventTimeout) for anything but a well-formed event of at most
    `max_bytes` (header line, data and payload together); IncompleteReadError at EOF mid-event.
    The header line is also bounded by the reader's limit (set to `max_bytes`).
    """
    try:  # wait_for, not asyncio.timeout: on 3.11 a timeout that expires as the block ends leaves the
        # task's cancel request pending, and the next await of the connection would be cancelled
        event_type, data, payload = await asyncio.wait_for(_read_rest(reader, first, max_bytes), timeout_s)
    except TimeoutError:
        raise EventTimeout(f"event not complete within {timeout_s:g} s") from None
    check_strings(data, "data")
    return Event(type=event_type, data=data, payload=payload)


async def _read_rest(reader: asyncio.StreamReader, first: bytes, max_bytes: int):
    try:
        line = first if first == b"\n" else first + await reader.readline()
    except ValueError as exc:  # LimitOverrunError: no newline within the reader's limit
        raise EventTooLarge(f"event header longer than {max_bytes} bytes") from exc
    header = _json_object(line, "event header")
    event_type, data, data_length, payload_length = _header_fields(header)
    size = len(line) + data_length + payload_length
    if size > max_bytes:
        raise EventTooLarge(f"event of {size} bytes exceeds the limit of {max_bytes}")
    if data_length:
        data.update(_json_object(await reader.readexactly(data_length), "event data"))
    payload = await reader.readexactly(payload_length) if payload_length else None
    return event_type, data, payload


def _header_fields(header: dict[str, Any]) -> tuple[str, dict[str, Any], int, int]:
    event_type = header.get("type")
    if not isinstance(event_type, str) or not 0 < len(event_type) <= MAX_TYPE_CHARS:
        raise BadEvent(f"event header needs a `type` string of 1 to {MAX_TYPE_CHARS} characters")
    _require_clean("event type", event_type, line_breaks=False)
    data = header.get("data")
    if data is None:
        data = {}
    elif not isinstance(data, dict):
        raise BadEvent(f"event `data` must be an object, got {type(data).__name__}")
    return event_type, data, _length(header, "data_length"), _length(header, "payload_length")


def _length(header: dict[str, Any], key: str) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadEvent(f"event `{key}` must be a whole number of bytes, got {_shown(value)}")
    return value


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes; numbers must be finite, nesting is bounded (checked after)."""
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError as exc:
        raise BadEvent(f"{what} is not UTF-8 (byte {exc.start})") from None
    except RecursionError:  # the C decoder's own depth guard; far deeper than MAX_DEPTH anyway
        raise BadEvent(f"{what} nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, an integer of over 4300 digits
        raise BadEvent(f"{what} is not JSON: {str(exc)[:80]}") from None
    if not isinstance(value, dict):
        raise BadEvent(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {literal[:20]}")
    return value


def check_strings(value: Any, where: str) -> None:
    """Every string in `value` (keys too) is clean text; containers nest at most MAX_DEPTH deep."""
    pending = [(value, where, 1)]
    while pending:
        item, name, depth = pending.pop()
        if isinstance(item, str):
            _require_clean(name, item, line_breaks=True)
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise BadEvent(f"event data nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                _require_clean(f"key in {name}", key, line_breaks=False)
                pending.append((child, f"{name}.{key[:40]}", depth + 1))
        else:
            pending.extend((child, name, depth + 1) for child in item)


def _require_clean(name: str, text: str, *, line_breaks: bool) -> None:
    """BadEvent if `text` holds a lone surrogate or a control character (but \\n \\r \\t where allowed):
    the check every door makes (text/checks.py), with its reasons."""
    try:
        checks.check_clean(name, text, allow_line_breaks=line_breaks)
    except checks.InvalidText as exc:
        raise BadEvent(str(exc)) from None


def text_field(data: dict[str, Any], event_type: str) -> str:
    """The `text` of a synthesize or synthesize-chunk event; BadEvent saying what is missing or wrong."""
    text = data.get("text")
    if text is None:
        raise BadEvent(f"{event_type} event without `text`: it needs the text to speak, as a string")
    if not isinstance(text, str):
        raise BadEvent(f"{event_type} event: text must be a string, got {type(text).__name__}")
    return text


def voice_fields(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """The voice name and language of a synthesize(-start) event, both honoured when both are given
    (the wyoming package's own reader keeps only the name); a name `vivian@de` (wyoming_info.py) carries
    the language Home Assistant's pipeline chose. BadEvent for fields of the wrong shape."""
    voice = data.get("voice")
    if voice is None:
        return None, None
    if not isinstance(voice, dict):
        raise BadEvent(f"event `voice` must be an object, got {type(voice).__name__}")
    name, language = voice.get("name"), voice.get("language")
    for value in (name, language):
        if value is not None and not isinstance(value, str):
            raise BadEvent(f"voice name and language must be strings, got {type(value).__name__}")
    if name is not None:
        name, named_language = split_voice_id(name)
        language = language or named_language
    return name, language


def speakable(text: str) -> bool:
    """False for text of only white space and invisible format characters (zero-width space, BOM...)."""
    return checks.has_speakable_text(text)


def _shown(value: Any) -> str:
    return repr(value)[:40]
