"""Which connection `Connections.make_room` closes for a newcomer over a cap: only one that waits between
requests with nothing of the next one sent, even if the event loop has not read what the kernel holds."""

from __future__ import annotations

import socket

from qwen3tts.servers.http_guard import Connections
from qwen3tts.settings import ServersSettings


class Protocol:
    """What make_room asks of uvicorn's protocol: whether it is between requests, whether it ever had a
    request (`cycle`), its transport, and its `refuse`."""

    def __init__(self, idle: bool, asked: bool = True):
        self.idle = idle
        self.cycle = object() if asked else None
        self.transport = self
        self.closed = False
        self.refused: str | None = None

    def idle_between_requests(self) -> bool:
        return self.idle

    def close(self) -> None:
        self.closed = True

    def refuse(self, reason: str) -> None:
        self.refused = reason


def connections(*entries) -> Connections:
    gate = Connections(config=None, server=None, limits=ServersSettings())
    for protocol, client, sock in entries:
        gate.open[protocol] = (client, sock)
    return gate


def test_a_connection_whose_first_bytes_wait_unread_in_the_kernel_is_not_closed():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.setblocking(False)
        theirs.sendall(b"POST /v1/audio/speech HTTP/1.1\r\n")  # sent, but the busy loop has not read it
        waiting = Protocol(idle=True)
        gate = connections((waiting, "10.0.0.1", ours))
        assert gate.make_room("10.0.0.1") is False
        assert not waiting.closed
        assert ours.recv(64).startswith(b"POST")  # peeking consumed nothing


def test_the_oldest_idle_connection_of_the_client_is_closed_and_no_other():
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        for ours, _ in pairs:
            ours.setblocking(False)
        busy, other_client, idle = Protocol(idle=False), Protocol(idle=True), Protocol(idle=True)
        owners = (busy, "10.0.0.1"), (other_client, "10.0.0.2"), (idle, "10.0.0.1")
        entries = [(p, client, ours) for (p, client), (ours, _) in zip(owners, pairs, strict=True)]
        gate = connections(*entries)
        assert gate.make_room("10.0.0.1") is True
        assert (busy.closed, other_client.closed, idle.closed) == (False, False, True)
        assert gate.make_room("10.0.0.1") is False  # nothing idle of that client is left
        assert gate.make_room(None) is True and other_client.closed  # over the server's cap: anyone's
    finally:
        for pair in pairs:
            for sock in pair:
                sock.close()


def test_a_connection_that_never_asked_is_refused_with_a_reason_a_keep_alive_one_just_closed():
    """A fresh connection displaced for a newcomer gets the 503 a refused newcomer would (its client may be
    writing its first request); an idle keep-alive connection is closed, and its client reconnects."""
    pairs = [socket.socketpair() for _ in range(2)]
    try:
        for ours, _ in pairs:
            ours.setblocking(False)
        fresh, kept = Protocol(idle=True, asked=False), Protocol(idle=True)
        gate = connections((fresh, "10.0.0.1", pairs[0][0]), (kept, "10.0.0.1", pairs[1][0]))
        assert gate.make_room("10.0.0.1") and gate.make_room("10.0.0.1")
        assert "connection cap" in fresh.refused and not fresh.closed
        assert kept.closed and kept.refused is None
    finally:
        for pair in pairs:
            for sock in pair:
                sock.close()
