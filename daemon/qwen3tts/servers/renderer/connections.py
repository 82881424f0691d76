"""The renderer's connections go through the servers' shared gate (servers/limits.py), as Wyoming's and
HTTP's do: `servers.max_connections` in all, `max_connections_per_client` per address, the file-handle
reserve, accept errors logged once a minute. An admitted socket is served by aiohttp's request handler,
which tells us when the connection is gone so its slot is free at once; one over a cap gets a 503 with
the reason and is closed.
"""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from qwen3tts.servers.http_guard import refuse
from qwen3tts.servers.limits import ConnectionGate, FileBudget, Listener


class _EndingHandler(RequestHandler):
    """aiohttp's handler for one connection, with a future that is done when the connection is lost."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ended = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        if not self.ended.done():
            self.ended.set_result(None)


def gated_listener(sock: socket.socket, runner: web.AppRunner, limits, files: FileBudget) -> Listener:
    """A started Listener serving admitted connections with `runner`'s aiohttp server; an idle connection
    is closed after `servers.idle_timeout_s` (aiohttp's keep-alive timeout)."""

    async def connected(conn: socket.socket, client: str) -> None:
        loop = asyncio.get_running_loop()
        handler = _EndingHandler(runner.server, loop=loop, keepalive_timeout=limits.idle_timeout_s,
                                 access_log=None)  # fmt: skip
        await loop.connect_accepted_socket(lambda: handler, sock=conn)
        await handler.ended  # the gate's slot is held until then

    listener = Listener(sock, ConnectionGate("renderer", limits, files), connected, refuse)
    listener.start()
    return listener
