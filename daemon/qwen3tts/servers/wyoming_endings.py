"""Why a Wyoming connection ends, and the `error` event it is told first.

Codes: `busy` (every slot taken and the short queue full, or no slot within `servers.max_request_s`),
`RequestError` (a refused text, voice or language), `bad_event` (malformed: not JSON, a field of the
wrong type, a synthesize without text), `unexpected_event` (an unknown type, a chunk or stop without a
start, a second start), `too_large`, `timeout` (idle, a slow event, a request past
`servers.max_request_s`), `shutdown`, or the exception's name for a failed synthesis.
"""

from __future__ import annotations

from dataclasses import dataclass

from wyoming.error import Error

from qwen3tts.errors import RequestError
from qwen3tts.servers.streams import Busy, InvalidField


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
