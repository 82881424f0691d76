"""Why a Wyoming connection ends, the `error` event it is told first, and the close.

Codes: `busy` (every slot taken and the short queue full, or no slot within `servers.max_request_s`),
`RequestError` (a refused text, voice or language), `bad_event` (malformed: not JSON, a field of the
wrong type, a synthesize without text), `unexpected_event` (an unknown type, a chunk or stop without a
start, a second start), `too_large`, `timeout` (idle, a slow event, a request past
`servers.max_request_s`), `shutdown`, or the exception's name for a failed synthesis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from wyoming.error import Error
from wyoming.event import async_write_event

from qwen3tts.errors import RequestError
from qwen3tts.servers.limits import LINGER_S, ThrottledLog
from qwen3tts.servers.refusals import Busy, InvalidField

log = logging.getLogger(__name__)
ENDINGS = ThrottledLog(log, interval_s=10.0, level=logging.INFO)
"""A connection's error, one line per error code in 10 s: a client that floods bad events cannot flood
the journal."""


@dataclass(frozen=True)
class Ending:
    """Why a connection ends: the error event to send first (None: nothing to say), the outcome of the
    streams still open (cut short: cancelled, unless they ran out of time), and whether to drop the
    connection without a word."""

    error: Error | None = None
    outcome: str = "cancelled"
    abort: bool = False


GONE = Ending()  # the client closed its side
STALLED = Ending(abort=True)  # the client reads nothing, or its socket broke


def failed(text: str, code: str, outcome: str = "cancelled") -> Ending:
    return Ending(Error(text=text, code=code), outcome)


class ClientStalled(ConnectionError):
    """The client did not take written data within the write timeout."""


def error_code(exc: RequestError) -> str:
    """The error event's code: `busy`, else the class name (a refused field keeps `RequestError`)."""
    if isinstance(exc, Busy):
        return "busy"
    return "RequestError" if isinstance(exc, InvalidField) else type(exc).__name__


def unexpected(kind: str) -> str:
    """What is wrong with an event of type `kind` that the server does not take at this point."""
    if kind == "synthesize-start":
        return "synthesize-start while a text stream is open: send synthesize-stop first"
    if kind in ("synthesize-chunk", "synthesize-stop"):
        return f"{kind} without synthesize-start"
    return (f"unexpected event {kind!r}: this server takes describe, ping, synthesize, synthesize-start, "
            f"-chunk and -stop")  # fmt: skip


async def close_connection(reader, writer, ending: Ending, client: str, write_timeout_s: float) -> None:
    """Tell the client why (unless the ending aborts), then close; a client that does not take the
    goodbye within the write timeout is dropped."""
    if not ending.abort:
        try:
            await asyncio.wait_for(_goodbye(reader, writer, ending.error, client), write_timeout_s)
        except (TimeoutError, OSError):
            ending = STALLED
    if ending.abort:
        writer.transport.abort()
    else:
        writer.close()


async def _goodbye(reader, writer, error: Error | None, client: str) -> None:
    """The error event if there is one, our FIN, then the client's last bytes read and dropped for up
    to LINGER_S, so closing does not reset the connection before the client has read the error."""
    if error is not None:
        ENDINGS.log(error.code, "wyoming %s: %s: %r; closing", client, error.code, error.text)
        await async_write_event(error.event(), writer)
    writer.write_eof()
    with contextlib.suppress(TimeoutError, OSError):
        await asyncio.wait_for(_drop_input(reader), LINGER_S)


async def _drop_input(reader) -> None:
    while await reader.read(1 << 16):
        pass
