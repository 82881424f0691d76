"""Talking to the Wyoming server as Home Assistant does: the wyoming package's own client and reader.

`until_eof` sends events with `AsyncTcpClient` (what Home Assistant's Wyoming integration uses) and
reads events until the server closes; `raw_until_eof` writes bytes the client could never produce
(lone surrogates, broken headers) and reads with the package's `async_read_event`. Both return what
came back and the seconds from the last write to EOF.
"""

from __future__ import annotations

import asyncio
import time

from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event

DEADLINE_S = 10.0


async def until_eof(
    port: int, events: list[Event], deadline_s: float = DEADLINE_S
) -> tuple[list[Event], float]:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        for event in events:
            await client.write_event(event)
        sent = time.monotonic()
        received = []
        async with asyncio.timeout(deadline_s):
            while (event := await client.read_event()) is not None:
                received.append(event)
        return received, time.monotonic() - sent


async def raw_until_eof(port: int, raw: bytes, deadline_s: float = DEADLINE_S) -> tuple[list[Event], float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        sent = time.monotonic()
        received = []
        async with asyncio.timeout(deadline_s):
            while (event := await async_read_event(reader)) is not None:
                received.append(event)
        return received, time.monotonic() - sent
    finally:
        writer.close()


def error_of(events: list[Event]) -> Error:
    """The one error event, which must be the last event before EOF."""
    errors = [e for e in events if Error.is_type(e.type)]
    assert len(errors) == 1 and Error.is_type(events[-1].type), [e.type for e in events]
    return Error.from_event(events[-1])


async def ask(port: int, events: list[Event], until: str, deadline_s: float = DEADLINE_S) -> list[Event]:
    """Send `events` on one connection and read until an event of type `until` (included)."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        for event in events:
            await client.write_event(event)
        received = []
        async with asyncio.timeout(deadline_s):
            while not received or received[-1].type != until:
                event = await client.read_event()
                assert event is not None, f"EOF after {[e.type for e in received]}"
                received.append(event)
        return received
