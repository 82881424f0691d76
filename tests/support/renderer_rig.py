"""The renderer under test as Home Assistant meets it: started by start_servers on loopback, a media
server on 127.0.0.1 serving a WAV (and hostile media), and a recording outlet in place of the queue."""

from __future__ import annotations

import asyncio
import io
import threading
import wave
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import numpy as np
from aiohttp import web
from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.profiles.dlna import DmrDevice, TransportState
from mosquitto_broker import free_port

from qwen3tts.servers import start_servers
from qwen3tts.servers.renderer.outlet import Media, OutletRefused
from qwen3tts.settings_loader import load_settings

WAIT_S = 60.0  # a hang guard only: every wait below is for a state or an event
TONE_HZ = 440.0
WAV_RATE = 16_000
WAV_SECONDS = 1.0


def wav_bytes(seconds: float = WAV_SECONDS, rate: int = WAV_RATE, channels: int = 2) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    tone = (0.5 * np.sin(2 * np.pi * TONE_HZ * t) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.repeat(tone, channels).tobytes())
    return buffer.getvalue()


@dataclass
class RecordingOutlet:
    """The MediaOutlet protocol, recording what it is given; plays end when the test says so. Its
    events come from another thread, as the announcer's would."""

    media: list[Media] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    gains: list[tuple[str, float]] = field(default_factory=list)
    refuse: str | None = None
    callbacks: dict[str, object] = field(default_factory=dict)

    def play(self, media, on_event) -> str:
        if self.refuse:
            raise OutletRefused(self.refuse)
        self.media.append(media)
        play_id = f"play-{len(self.media)}"
        self.callbacks[play_id] = on_event
        threading.Thread(target=on_event, args=("started", "")).start()
        return play_id

    def finish(self, play_id: str) -> None:
        threading.Thread(target=self.callbacks[play_id], args=("finished", "")).start()

    def stop(self, play_id: str) -> None:
        self.stopped.append(play_id)
        threading.Thread(target=self.callbacks[play_id], args=("cancelled", "stopped")).start()

    def set_gain(self, play_id: str, gain: float) -> None:
        self.gains.append((play_id, gain))


def _slow(release: asyncio.Event):
    async def handler(request):  # answers only when the rig closes, long after the fetch limit
        await release.wait()
        return web.Response(body=b"", content_type="audio/wav")

    return handler


async def endless(request):
    response = web.StreamResponse(headers={"Content-Type": "audio/wav"})
    await response.prepare(request)
    while True:
        await response.write(b"\0" * 65536)


def _serve(body: bytes, kind: str):
    async def handler(request):
        return web.Response(body=body, content_type=kind)

    return handler


def media_app(release: asyncio.Event) -> web.Application:
    wav = wav_bytes()
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 4096
    app = web.Application()
    routes = {
        "/hello.wav": (wav, "audio/wav"),
        "/page.html": (b"<html>no audio</html>", "text/html"),
        "/noise.wav": (bytes(range(256)) * 64, "audio/wav"),
        "/image.bin": (png, "application/octet-stream"),
        "/long.wav": (wav_bytes(seconds=5.0, rate=8000, channels=1), "audio/wav"),
        "/huge.wav": (b"\0" * 300_000, "audio/wav"),
    }
    for path, (body, kind) in routes.items():
        app.router.add_get(path, _serve(body, kind))
    app.router.add_get("/slow.wav", _slow(release))
    app.router.add_get("/endless.wav", endless)
    return app


@dataclass
class Rig:
    servers: object
    outlet: RecordingOutlet
    media_base: str
    requester: AiohttpRequester
    dmr: DmrDevice
    changes: list[str]
    changed: asyncio.Event

    async def wait_state(self, state: TransportState, poll: bool = True) -> None:
        """Until the DmrDevice sees `state` (by polling as Home Assistant does without events)."""
        async with asyncio.timeout(WAIT_S):
            while self.dmr.transport_state != state:
                if poll:
                    await self.dmr.async_update(do_ping=False)
                    await asyncio.sleep(0.05)
                else:
                    self.changed.clear()
                    await self.changed.wait()

    async def play(self, path: str, title: str = "Hello") -> None:
        """What Home Assistant's dlna_dmr does for play_media."""
        await self.dmr.async_set_transport_uri(f"{self.media_base}{path}", title)
        await self.dmr.async_wait_for_can_play()
        await self.dmr.async_play()


def renderer_settings(*overrides: str):
    return load_settings(
        None,
        [
            "servers.renderer.enabled=true",
            f"servers.renderer.port={free_port()}",
            "servers.renderer.name=qwen3tts test renderer",
            "servers.renderer.max_media_s=2",
            "servers.renderer.max_media_bytes=200000",
            *overrides,
        ],
    )


@asynccontextmanager
async def renderer_rig(*overrides: str, subscribe: bool = False, outlet: RecordingOutlet | None = None):
    outlet = outlet or RecordingOutlet()
    release = asyncio.Event()
    runner = web.AppRunner(media_app(release), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    media_port = site._server.sockets[0].getsockname()[1]
    servers = await asyncio.to_thread(start_servers, renderer_settings(*overrides), None, None, outlet=outlet)
    requester = AiohttpRequester()
    notify = AiohttpNotifyServer(requester, source=("127.0.0.1", 0)) if subscribe else None
    try:
        device = await UpnpFactory(requester).async_create_device(servers.renderer.description_url)
        if notify is not None:
            await notify.async_start_server()
        dmr = DmrDevice(device, notify.event_handler if notify else None)
        changes: list[str] = []
        changed = asyncio.Event()

        def on_event(service, variables):
            for variable in variables:
                if variable.name == "TransportState":
                    changes.append(variable.value)
            changed.set()

        dmr.on_event = on_event
        if subscribe:
            await dmr.async_subscribe_services(auto_resubscribe=False)
        await dmr.async_update()
        yield Rig(servers, outlet, f"http://127.0.0.1:{media_port}", requester, dmr, changes, changed)
    finally:
        if notify is not None:
            await notify.async_stop_server()
        await asyncio.to_thread(servers.stop)
        release.set()
        await runner.cleanup()
