"""The renderer served: its aiohttp application on a socket bound at start, and SSDP on its address.

Runs on the servers' event loop. The routes are async-upnp-client's (device and service descriptions,
SOAP control, SUBSCRIBE/UNSUBSCRIBE) behind RequestGuard; SSDP answers searches and sends the
announcements (alive at start and every 30 s, byebye at stop) from the bound address only, so a
loopback renderer is never seen off the machine. Media is fetched with its own HTTP client session.
"""

from __future__ import annotations

import logging
import socket
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import aiohttp
from aiohttp import web
from async_upnp_client.aiohttp import AiohttpRequester
from async_upnp_client.server import (
    SsdpAdvertisementAnnouncer,
    SsdpSearchResponder,
    action_handler,
    subscribe_handler,
    to_xml,
    unsubscribe_handler,
)

from qwen3tts.errors import ConfigError
from qwen3tts.servers.limits import FileBudget, Listener
from qwen3tts.servers.renderer.connections import gated_listener
from qwen3tts.servers.renderer.device import friendly_name, renderer_device_class
from qwen3tts.servers.renderer.fetch import FetchLimits
from qwen3tts.servers.renderer.guard import RequestGuard
from qwen3tts.servers.renderer.outlet import MediaOutlet
from qwen3tts.servers.renderer.player import Player, PlayerLimits
from qwen3tts.servers.wyoming_zeroconf import announced_address

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT_S = 5  # an event subscriber that does not take its NOTIFY in this time is skipped
MAX_FETCH_CONNECTIONS = 2
SHUTDOWN_S = 2.0  # requests still running at stop (a Play fetching, an event being sent) get this long


class RendererSite:
    """The running renderer: `player` (state), `description_url`, `listener` (its connections, gated),
    `close()` (a coroutine)."""

    def __init__(self, player: Player, description_url: str, listener: Listener, closers: list):
        self.player = player
        self.description_url = description_url
        self.listener = listener
        self._closers = closers

    async def close(self) -> None:
        """Stop serving; a fetch under way is dropped, what the queue already took is the queue's (its
        shutdown policy finishes or cuts it)."""
        self.player.close()
        for close in reversed(self._closers):
            try:
                await close()
            except (OSError, RuntimeError, AssertionError) as exc:  # a socket already gone: keep closing
                log.warning("renderer: closing: %s: %s", type(exc).__name__, exc)


async def start_renderer(
    sock: socket.socket, servers_config, outlet: MediaOutlet, files: FileBudget
) -> RendererSite:
    """Serve the renderer on the listening `sock`; SSDP too when `servers.renderer.ssdp`."""
    config = servers_config.renderer
    if ":" in config.host:
        raise ConfigError(f"servers.renderer.host: {config.host} is IPv6; the renderer is IPv4 only")
    host = announced_address(config.host)
    name, port = friendly_name(config.name), sock.getsockname()[1]
    device = renderer_device_class(name)(AiohttpRequester(timeout=NOTIFY_TIMEOUT_S), f"http://{host}:{port}")
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=MAX_FETCH_CONNECTIONS),
        headers={"User-Agent": "qwen3tts-renderer"},
    )
    closers: list = [session.close]
    limits = PlayerLimits(
        FetchLimits(config.max_media_bytes, config.fetch_timeout_s),
        config.max_media_s,
        tuple(config.announce_sources),
    )
    decoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="renderer-decode")

    async def stop_decoding() -> None:  # a decode under way ends by its own limits; nothing waits for it
        decoder.shutdown(wait=False, cancel_futures=True)

    closers.append(stop_decoding)
    player = Player(outlet, limits, session, decoder)
    for service in device.all_services:
        if hasattr(service, "attach"):
            service.attach(player)
    runner = web.AppRunner(_application(device, servers_config), access_log=None,
                           shutdown_timeout=SHUTDOWN_S)  # fmt: skip
    await runner.setup()
    closers.append(runner.cleanup)
    listener = gated_listener(sock, runner, servers_config, files)
    closers.append(listener.close)
    if config.ssdp:
        for part in (
            SsdpSearchResponder(device, source=(host, 0)),
            SsdpAdvertisementAnnouncer(device, source=(host, 0)),
        ):
            await part.async_start()
            closers.append(part.async_stop)
    url = f"http://{host}:{port}{device.device_url}"
    log.info("renderer: %r (%s) at %s%s", name, device.udn, url, ", SSDP on" if config.ssdp else "")
    return RendererSite(player, url, listener, closers)


def _application(device, servers_config) -> web.Application:
    services = {service.SERVICE_DEFINITION.event_sub_url: service for service in device.all_services}
    guard = RequestGuard(
        servers_config.read_timeout_s,
        lambda path: len(services[path]._subscribers) if path in services else 0,
    )
    app = web.Application(middlewares=[guard.middleware], client_max_size=servers_config.max_body_bytes)
    app.router.add_get(device.device_url, partial(to_xml, device))
    for service in device.all_services:
        definition = service.SERVICE_DEFINITION
        app.router.add_get(definition.scpd_url, partial(to_xml, service))
        app.router.add_post(definition.control_url, partial(action_handler, service))
        app.router.add_route("SUBSCRIBE", definition.event_sub_url, partial(subscribe_handler, service))
        app.router.add_route("UNSUBSCRIBE", definition.event_sub_url, partial(unsubscribe_handler, service))
    return app
