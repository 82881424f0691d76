"""The Wyoming TTS server (Home Assistant's Wyoming integration), on the `wyoming` package's event types.

describe -> info (wyoming_info.py); synthesize -> audio-start, an audio-chunk per engine PCM chunk as it
is produced, audio-stop. Streaming text (synthesize-start / -chunk / -stop -> synthesize-stopped)
synthesises each sentence as soon as it is complete, each with its own audio-start .. audio-stop, the way
wyoming-piper answers it. Every error is one `error` event, then the close (wyoming_connection.py).

Connections are accepted by the servers' shared Listener (limits.py): over `servers.max_connections`
or `servers.max_connections_per_client` a connection gets the error `too_many_connections` and is
closed at once. With `servers.wyoming.zeroconf` the server is announced over mDNS (wyoming_zeroconf.py).
"""

from __future__ import annotations

import asyncio
import io
import socket

from wyoming.error import Error
from wyoming.event import write_event

from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.limits import ConnectionGate, FileBudget, Listener
from qwen3tts.servers.wyoming_connection import WyomingHandler
from qwen3tts.servers.wyoming_info import wyoming_info
from qwen3tts.servers.wyoming_zeroconf import ZeroconfAdvert, instance_name
from qwen3tts.settings import ServersSettings

SHUTDOWN_S = 3.0


def _refuse(conn: socket.socket, reason: str) -> None:
    """A connection over a cap: the error event, without waiting (the socket is fresh); the Listener
    then closes it gracefully."""
    wire = io.BytesIO()
    write_event(Error(text=f"connection refused: {reason}", code="too_many_connections").event(), wire)
    conn.send(wire.getvalue())


async def start_wyoming(sock: socket.socket, gateway: Gateway, config: ServersSettings, files: FileBudget):
    """Serve Wyoming on an already bound socket with the `servers` settings `config`; returns the
    coroutine function that stops it (the socket is bound by the caller, so a busy port fails at start)."""
    handlers: set[WyomingHandler] = set()

    async def connected(conn: socket.socket, client: str) -> None:
        reader, writer = await asyncio.open_connection(sock=conn, limit=config.max_body_bytes)
        # The info is built per connection: the registered voices may have changed on SIGHUP.
        handler = WyomingHandler(reader, writer, gateway, wyoming_info(gateway.offer).event(), config, client)
        handlers.add(handler)
        try:
            await handler.run()
        finally:
            handlers.discard(handler)

    listener = Listener(sock, ConnectionGate("wyoming", config, files), connected, _refuse)
    listener.start()
    advert = None
    if config.wyoming.zeroconf:
        name = instance_name(config.wyoming.zeroconf_name)
        advert = ZeroconfAdvert(name, config.wyoming.host, sock.getsockname()[1])
        announcing = asyncio.create_task(advert.start(), name="wyoming-zeroconf")

    async def stop() -> None:
        await listener.close()
        if advert is not None:
            announcing.cancel()
            await asyncio.gather(announcing, return_exceptions=True)
            await asyncio.wait_for(advert.stop(), SHUTDOWN_S)
        for handler in list(handlers):
            await handler.stop()  # error `shutdown`, then the close; their streams are cancelled
        if listener.connections:
            await asyncio.wait(listener.connections, timeout=SHUTDOWN_S)

    return stop
