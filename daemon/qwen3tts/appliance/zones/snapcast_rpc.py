"""snapserver's JSON-RPC control, the two calls a Snapcast zone needs: Server.GetStatus and Group.SetStream.

JSON-RPC 2.0 over TCP (snapserver's `tcp.port`, 1705 by default): one JSON object per line each way, and
snapserver also pushes notifications (`Client.OnConnect`, `Stream.OnUpdate`, ...) to every control
connection, which are skipped while waiting for the answer with our id. Written here with the standard
library rather than the PyPI `snapcast` package: that one is an asyncio client that keeps a live model of
the server over one long-lived connection, which our audio thread (blocking I/O, one call at the start and
one at the end of an announcement) would have to drive through an event loop of its own. A connection per
call is what survives a snapserver restart without any state to repair.
"""

from __future__ import annotations

import itertools
import json
import socket
from dataclasses import dataclass
from typing import Any

from qwen3tts.errors import AudioError

MAX_ANSWER_BYTES = 4 << 20
"""A status of a few hundred clients is far below this; more is not snapserver talking."""


class SnapcastError(AudioError):
    """snapserver is unreachable, refused a call, or answered something we cannot use."""


class SnapcastRefused(SnapcastError):
    """snapserver answered a call with an error (an unknown group or stream): reachable, but no."""


@dataclass(frozen=True)
class StreamFormat:
    """A snapserver stream's `sampleformat` (`48000:16:2`)."""

    rate: int
    bits: int
    channels: int

    @classmethod
    def parse(cls, text: str, stream: str) -> StreamFormat:
        try:
            rate, bits, channels = (int(part) for part in text.split(":"))
        except ValueError:
            raise SnapcastError(f"stream {stream!r} has a sampleformat we cannot read: {text!r}") from None
        if bits != 16 or channels not in (1, 2) or not 8000 <= rate <= 192000:
            raise SnapcastError(
                f"stream {stream!r} is {text}; qwen3tts writes 16-bit mono or stereo PCM: set its "
                "sampleformat to e.g. 48000:16:2"
            )
        return cls(rate, bits, channels)


class SnapcastControl:
    """Calls snapserver's JSON-RPC, one TCP connection per call."""

    def __init__(self, host: str, port: int, timeout: float = 2.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._ids = itertools.count(1)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The `result` of one call; SnapcastError when snapserver cannot be reached or says no."""
        request_id = next(self._ids)
        request = {
            "id": request_id,
            "jsonrpc": "2.0",
            "method": method,
            **({"params": params} if params else {}),
        }
        try:
            with socket.create_connection((self.host, self.port), timeout=self.timeout) as conn:
                conn.sendall(json.dumps(request).encode() + b"\r\n")
                answer = self._answer(conn, request_id)
        except OSError as exc:
            raise SnapcastError(f"snapserver control {self.address} unreachable: {exc}") from exc
        if "error" in answer:
            error = answer["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise SnapcastRefused(f"snapserver refused {method}: {message}")
        return answer.get("result")

    def _answer(self, conn: socket.socket, request_id: int) -> dict[str, Any]:
        buffer, received = b"", 0
        while True:
            data = conn.recv(65536)
            if not data:
                raise SnapcastError(f"snapserver control {self.address} closed the connection")
            received += len(data)
            if received > MAX_ANSWER_BYTES:
                raise SnapcastError(f"snapserver control {self.address} answered more than we read")
            *lines, buffer = (buffer + data).split(b"\n")
            for line in lines:
                message = _decode(line)
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message  # anything else is a notification or another client's noise

    # ---- what a zone asks ----

    def status(self) -> dict[str, Any]:
        result = self.call("Server.GetStatus")
        server = result.get("server") if isinstance(result, dict) else None
        if not isinstance(server, dict):
            raise SnapcastError("snapserver's status has no server object")
        return server

    def set_stream(self, group_id: str, stream_id: str) -> None:
        self.call("Group.SetStream", {"id": group_id, "stream_id": stream_id})


def _decode(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def stream_of(status: dict[str, Any], stream_id: str) -> dict[str, Any]:
    """The stream `stream_id` of a status; SnapcastError naming the streams there are."""
    streams = [s for s in status.get("streams", ()) if isinstance(s, dict)]
    for stream in streams:
        if stream.get("id") == stream_id:
            return stream
    known = ", ".join(str(s.get("id")) for s in streams) or "none"
    raise SnapcastError(f"snapserver has no stream {stream_id!r} (its streams: {known})")


def stream_format(status: dict[str, Any], stream_id: str) -> StreamFormat:
    uri = stream_of(status, stream_id).get("uri", {})
    query = uri.get("query", {}) if isinstance(uri, dict) else {}
    return StreamFormat.parse(str(query.get("sampleformat", "48000:16:2")), stream_id)


def groups_for(status: dict[str, Any], clients: tuple[str, ...]) -> dict[str, str]:
    """{group id: its current stream} of every group holding one of `clients` (ids or names; * = all)."""
    out = {}
    for group in status.get("groups", ()):
        members = group.get("clients", ()) if isinstance(group, dict) else ()
        names = {c.get("id") for c in members} | {c.get("config", {}).get("name") for c in members}
        if "*" in clients or names.intersection(clients):
            out[str(group.get("id"))] = str(group.get("stream_id"))
    return out
