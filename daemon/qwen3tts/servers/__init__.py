"""Network doors sharing the engine: a Wyoming server (Home Assistant) and an OpenAI-style HTTP API.

`start_servers(settings, engine, offer, metrics_source)` binds the enabled servers (bind errors and
unsafe binds raise here, before anything is served), runs both on one asyncio loop in one thread, and
returns a `Servers` whose `.stop()` cancels every network request and closes the sockets. With both
servers disabled (the default) there is no loop and no thread.

    offer.py    what a client may ask for: the bundle's voices and languages (the daemon's VoiceCatalog)
    gateway.py  Gateway (validation, slots); refusals.py Busy and InvalidField; speech_stream.py
                SpeechStream (one request: pieces -> engine handles); streamed_text.py turns Wyoming's
                text chunks into sentences
    slots.py    the synthesis slots and the short queue Wyoming requests wait in for one
    limits.py   connection caps, timeouts, file-handle reserve and the accept loop both servers share
    wyoming.py  the Wyoming server (Home Assistant; wyoming_connection/_events/_endings/_info/_zeroconf.py)
    http.py     the OpenAI-style API, /healthz, /metrics (http_request/_speech/_guard.py), the status
                page (status_page.py, its voices: voice_console.py); encoding.py the response formats
    renderer/   a UPnP/DLNA MediaRenderer: media fetched, decoded and handed to the `outlet` the
                service passes (renderer/outlet.py)
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from concurrent.futures import Future
from contextlib import ExitStack

from qwen3tts.errors import ConfigError
from qwen3tts.servers.auth import check_http_bind, check_renderer_bind, check_wyoming_bind
from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.limits import FileBudget
from qwen3tts.servers.metrics import ApplianceFigures, ApplianceSource, ServerMetrics
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.status_page import RecentEvents
from qwen3tts.settings import Settings, read_http_token
from qwen3tts.synthesis import TextOptions

__all__ = ["ApplianceFigures", "Offer", "RecentEvents", "Servers", "start_servers"]

log = logging.getLogger(__name__)
STOP_TIMEOUT_S = 5.0


class Servers:
    """The running servers: their loop thread (started with the first server), bound ports, metrics
    and gateway."""

    def __init__(self, gateway: Gateway, metrics: ServerMetrics):
        self.gateway = gateway
        self.metrics = metrics
        self.wyoming_port: int | None = None
        self.http_port: int | None = None
        self.renderer = None  # renderer/site.py RendererSite while the renderer runs
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closers: list = []  # coroutine functions run on stop
        self._stopped = False

    @property
    def running(self) -> bool:
        """True while the loop thread runs (only when at least one server is enabled)."""
        return self._thread is not None and self._thread.is_alive()

    def start_loop(self) -> None:
        """Start the loop thread; called once, when the first enabled server is about to start."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run_loop, name="qwen3tts-servers", daemon=True)
            self._thread.start()

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def call(self, coro, timeout: float | None = None):
        """Run a coroutine on the servers' loop from another thread and return its result."""
        if self._loop is None:
            coro.close()
            raise RuntimeError("no network server is running")
        future: Future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    def stop(self) -> None:
        """Cancel every network request, close the listeners, end the loop thread. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self._loop is not None:
            try:
                self.call(self._shutdown(), timeout=STOP_TIMEOUT_S + 1)
            except TimeoutError:
                log.error("servers: the listeners did not close within %.0f s", STOP_TIMEOUT_S + 1)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(STOP_TIMEOUT_S)
            log.info("network servers closed")
        self.gateway.shutdown()

    async def _shutdown(self) -> None:
        self.gateway.close_all()
        for close in reversed(self._closers):
            try:
                await asyncio.wait_for(close(), STOP_TIMEOUT_S)
            except Exception:  # a shutdown boundary: uvicorn's serve task re-raises whatever ended it,
                # and one listener that fails to close must not keep the other open
                log.exception("servers: closing a listener failed")


def start_servers(
    settings: Settings,
    engine,
    offer: Offer,
    metrics_source: ApplianceSource | None = None,
    environ: dict[str, str] | None = None,
    text: TextOptions | None = None,
    console=None,
    outlet=None,
) -> Servers:
    """Bind and start the enabled servers; ConfigError for an unsafe bind, OSError naming a busy port.

    `console` (status_page.StatusConsole, the running appliance) adds the HTTP server's status page;
    `outlet` (renderer/outlet.py MediaOutlet) is where the renderer hands its media, needed when it is
    enabled."""
    config = settings.servers
    token = read_http_token(config.http, environ) if config.http.enabled else None
    if config.http.enabled:
        check_http_bind(config.http.host, token)
    if config.wyoming.enabled:
        check_wyoming_bind(config.wyoming.host, config.wyoming.allow_network)
    if config.renderer.enabled:
        check_renderer_bind(config.renderer.host, config.renderer.allow_network)
        if outlet is None:
            raise ConfigError(
                "servers.renderer.enabled: this daemon has nowhere to play the renderer's media"
            )
    metrics = ServerMetrics(engine, metrics_source)
    gateway = Gateway(
        engine,
        offer,
        metrics,
        max_concurrent=config.max_concurrent_requests,
        max_waiting=config.max_waiting_requests,
        max_text_chars=settings.engine.max_text_chars,
        max_frames=settings.engine.max_frames,
        text=text or TextOptions(normalize=settings.text.normalize),
    )
    servers = Servers(gateway, metrics)
    with ExitStack() as undo:  # whatever fails on the way closes what was opened, then raises
        undo.callback(servers.stop)
        sockets = []
        if config.wyoming.enabled:
            sockets.append(("wyoming", _bind(config.wyoming.host, config.wyoming.port, "servers.wyoming")))
            undo.callback(sockets[-1][1].close)
        if config.http.enabled:
            sockets.append(("http", _bind(config.http.host, config.http.port, "servers.http")))
            undo.callback(sockets[-1][1].close)
        if config.renderer.enabled:
            sockets.append(
                ("renderer", _bind(config.renderer.host, config.renderer.port, "servers.renderer"))
            )
            undo.callback(sockets[-1][1].close)
        if sockets:
            servers.start_loop()
            files = FileBudget(config.file_reserve, config.max_connections * len(sockets))
        for name, sock in sockets:
            servers.call(_start(servers, name, sock, token, config, files, console, outlet), timeout=30)
        undo.pop_all()  # started: nothing to undo
    return servers


async def _start(servers: Servers, name: str, sock: socket.socket, token: str | None, config,
                 files: FileBudget, console=None, outlet=None) -> None:  # fmt: skip
    port = sock.getsockname()[1]
    if name == "renderer":
        from qwen3tts.servers.renderer.site import start_renderer

        servers.renderer = await start_renderer(sock, config, outlet, files)
        servers._closers.append(servers.renderer.close)
        return
    if name == "wyoming":
        from qwen3tts.servers.wyoming import start_wyoming

        servers._closers.append(await start_wyoming(sock, servers.gateway, config, files))
        servers.wyoming_port = port
    else:
        from qwen3tts.servers.http import start_http

        servers._closers.append(await start_http(sock, servers.gateway, config, token, files, console))
        servers.http_port = port
    log.info("%s server listening on %s port %d", name, sock.getsockname()[0], port)


def _bind(host: str, port: int, key: str) -> socket.socket:
    """A listening TCP socket, bound here so a busy port is an error at start, naming the setting."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"{key}.port: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.setblocking(False)
    return sock
