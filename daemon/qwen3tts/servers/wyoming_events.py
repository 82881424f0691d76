"""One Wyoming event read from a hostile client: bounded in size, depth and time, every string checked.

The wire format is the wyoming package's: a JSON header line (`type`, optional `data`, `data_length`,
`payload_length`, `version`), then `data_length` bytes of a JSON object merged into `data`, then
`payload_length` bytes of payload. The package's reader trusts every part of it (a header without
`type` is a KeyError, `"data_length": "5"` a TypeError, data `[1]` a TypeError, deep nesting a
RecursionError), so events are read and checked here and only then built as the package's `Event`.

Text checks (issue 27 item 1): every string, keys included, must be Unicode scalar text without
control characters (line breaks and tabs allowed in values), as MQTT payloads must; `speakable()`
tells text with something to say from white space and invisible format characters. These two
functions stand in for the text checks the front doors will share (servers may not import the MQTT
door's payload.py).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from wyoming.event import Event

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


def speakable(text: str) -> bool:
    """False for text of only white space and invisible format characters (zero-width space, BOM...)."""
    return checks.has_speakable_text(text)


def _shown(value: Any) -> str:
    return repr(value)[:40]
