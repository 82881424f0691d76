"""uvicorn's HTTP/1.1 protocol on connections the servers' Listener accepted, with the timeouts it lacks.

uvicorn closes a keep-alive connection idle between requests (`timeout_keep_alive`, set to
`servers.idle_timeout_s`) and bounds a request head's size (h11: 16 KiB), but nothing stops a client that
connects and sends nothing, sends its headers a byte a second, or never reads the response: each holds
a file handle and, for the last, a synthesis slot, for as long as it likes (issue 27). Here:

- **idle**: a new connection that sends nothing within `servers.idle_timeout_s` is closed;
- **headers**: a request head must be complete within `servers.read_timeout_s` of its first byte
  (the body has the same limit: http_request.py);
- **write**: a response whose transport buffer stays full (the client does not read) for
  `servers.write_timeout_s` is aborted, which ends the response and cancels its synthesis (the Listener
  keeps each socket's kernel send buffer small, so that happens within seconds of the client stopping,
  not after megabytes of audio piled up).

The connection caps (per server, per client address), the file-handle reserve and the accept loop that
logs its errors once per interval are the servers' shared `Listener` (limits.py).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from uvicorn.protocols.http.h11_impl import H11Protocol

from qwen3tts.servers.limits import LINGER_S, ThrottledLog
from qwen3tts.settings import ServersSettings

log = logging.getLogger(__name__)

BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


class GuardedProtocol(H11Protocol):
    """H11Protocol + idle, header and write timeouts; `closed` completes when the connection is gone."""

    def __init__(self, *args, limits: ServersSettings, warnings: ThrottledLog, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.warnings = warnings
        self.closed: asyncio.Future = self.loop.create_future()
        self._waiting: asyncio.TimerHandle | None = None  # for the first byte, or for the rest of a head
        self._reading_head = False
        self._stuck: asyncio.TimerHandle | None = None  # a full write buffer
        self._refused = False  # answered 503 for a newcomer: what it sends is dropped until it closes

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._wait("idle", self.limits.idle_timeout_s)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._between_requests() and not self._reading_head:
            self._reading_head = True
            self._wait("headers", self.limits.read_timeout_s)
        super().data_received(data)
        if not self._between_requests():
            self._reading_head = False
            self._cancel_wait()

    def eof_received(self) -> bool | None:
        if self._refused:
            self.transport.close()
            return None
        return super().eof_received()

    def refuse(self, reason: str) -> None:
        """A connection that never sent a request, closed to make room: the 503 a newcomer over a cap gets,
        then our FIN; its client's bytes are dropped until it closes (or LINGER_S), never a reset."""
        self._refused = True
        self._cancel_wait()
        self.transport.write(busy_response(reason))
        self.transport.write_eof()
        self._waiting = self.loop.call_later(LINGER_S, self.transport.close)

    def idle_between_requests(self) -> bool:
        """Connected, no request in progress and no byte of the next one read (bytes still in the kernel's
        buffer are the socket's to tell: Connections.make_room peeks at it before closing)."""
        transport = self.transport
        return (transport is not None and not transport.is_closing() and self._between_requests()
                and not self._reading_head)  # fmt: skip

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _wait(self, what: str, seconds: float) -> None:
        self._cancel_wait()
        self._waiting = self.loop.call_later(seconds, self._timed_out, what, seconds)

    def _cancel_wait(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    def _timed_out(self, what: str, seconds: float) -> None:
        self._waiting = None
        self.warnings.log(f"http-{what}", "http: closed a connection from %s: %s",
                              _client(self), f"no {'request' if what == 'idle' else 'complete request head'} "
                              f"within {seconds:g} s")  # fmt: skip
        self.transport.close()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stuck is None:
            self._stuck = self.loop.call_later(self.limits.write_timeout_s, self._write_timed_out)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stuck is not None:
            self._stuck.cancel()
            self._stuck = None

    def _write_timed_out(self) -> None:
        self._stuck = None
        self.warnings.log("http-write", "http: disconnected %s: it read nothing for %g s",
                              _client(self), self.limits.write_timeout_s)  # fmt: skip
        self.transport.abort()  # close() would wait for the buffer to drain: it never would

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_wait()
        if self._stuck is not None:
            self._stuck.cancel()
        super().connection_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)


def _client(protocol: H11Protocol) -> str:
    return protocol.client[0] if protocol.client else "?"


class Connections:
    """The HTTP connections of one server: the Listener's `connected` (run uvicorn's guarded protocol on
    an accepted socket until it ends) and `make_room` (close the longest-idle keep-alive connection)."""

    def __init__(self, config, server, limits: ServersSettings):
        """`server` is the uvicorn.Server that started without listeners."""
        self.config, self.server, self.limits = config, server, limits
        self.warnings = ThrottledLog(log)
        self.open: dict[GuardedProtocol, tuple[str, socket.socket]] = {}  # insertion order: oldest first

    async def connected(self, sock: socket.socket, client: str) -> None:
        protocol = GuardedProtocol(self.config, self.server.server_state, self.server.lifespan.state,
                                   limits=self.limits, warnings=self.warnings)  # fmt: skip
        self.open[protocol] = (client, sock)
        try:
            loop = asyncio.get_running_loop()
            await loop.connect_accepted_socket(lambda: protocol, sock)
            await protocol.closed
        finally:
            self.open.pop(protocol, None)

    def make_room(self, client: str | None) -> bool:
        """Close one connection of `client` (None: of anyone) that waits between two requests; True if
        there was one. A request in progress is never cut for a newcomer, nor one whose first bytes the
        kernel holds but the event loop has not read yet (a busy loop is slow to read, not the client)."""
        for protocol, (owner, sock) in self.open.items():
            if (client is None or owner == client) and protocol.idle_between_requests() and not _unread(sock):
                del self.open[protocol]
                log.debug("http: closed an idle connection of %s for a new one", owner)
                if protocol.cycle is None:  # it never asked: refused as the newcomer would have been
                    protocol.refuse("connection closed for a newer one over a connection cap")
                else:  # a keep-alive connection between requests: clients reconnect by themselves
                    protocol.transport.close()
                return True
        return False


def _unread(sock: socket.socket) -> bool:
    """Whether bytes from the client wait in the kernel's receive buffer (peeked: nothing is consumed)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # BlockingIOError: nothing waiting; any other error: the socket is going anyway
        return False


def busy_response(reason: str) -> bytes:
    text = f"busy: {reason}\n".encode("ascii", "backslashreplace")
    return BUSY_RESPONSE % (len(text), text)


def refuse(sock: socket.socket, reason: str) -> None:
    """A connection over a cap: 503 with the reason (best effort, never blocking); the Listener then
    closes it gracefully."""
    sock.send(busy_response(reason))
