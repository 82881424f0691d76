"""The renderer in the running daemon (the whole Service in process, real mosquitto, the real Engine over
the fake runner, a WAV zone): Home Assistant's DmrDevice finds it by an SSDP search on loopback, sets
its volume and plays a URL from a local HTTP server; the media is heard in the WAV zone as an
announcement with the events an MQTT `say` gets. A stream is cut by an MQTT emergency and resumes from
where it was cut, at the volume the controller set meanwhile. Every wait is for an event or a state,
never for a time."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import wave
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web
from announcer_rig import fake_runtime, start_subscribed
from async_upnp_client.aiohttp import AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.profiles.dlna import DmrDevice, TransportState
from async_upnp_client.search import SsdpSearchListener
from mosquitto_broker import free_port
from renderer_rig import TONE_HZ, media_app

from qwen3tts.appliance.audio.sinks import MODEL_RATE, WavSink
from qwen3tts.servers.renderer.device import DEVICE_TYPE
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "upnp"
WAIT_S = 60.0  # a hang guard only
LONG_S = 5.0  # renderer_rig's /long.wav


class GatedWavSink(WavSink):
    """The WAV zone, holding the audio thread inside `write()` once a renderer play (an id `upnp-...`) has
    had `after` samples: `reached` is set, and the write returns when the test sets `release`."""

    def __init__(self, directory: Path, after: int):
        super().__init__(directory)
        self.after, self.item, self.written = after, "", 0
        self.reached, self.release = threading.Event(), threading.Event()

    def begin(self, item_id: str) -> None:
        super().begin(item_id)
        self.item, self.written = item_id, 0

    def write(self, block: np.ndarray) -> bool:
        underflow = super().write(block)
        self.written += len(block)
        if self.item.startswith("upnp-") and self.written >= self.after and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(WAIT_S), "the test never released the audio thread"
        return underflow


def make_service(tmp_path, mosquitto, sink=None, **renderer) -> Service:
    config = tmp_path / "qwen3tts.yaml"
    sections = {
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {
            "lead_in_ms": 0,
            "tail_ms": 0,
            "chime_normal": "none",
            "chime_emergency": "none",
            "jitter_buffer_ms": 0,
            "sink": "wav",
            "wav_dir": str(tmp_path / "wav"),
            "loudness": {"enabled": False},
        },
        "thermal": {"enabled": False},
        "voice": {"voice": "ryan"},
        "cache": {"enabled": False},
        "servers": {"renderer": {"enabled": True, "port": free_port(), "ssdp": False, **renderer}},
    }
    config.write_text(json.dumps(sections))
    return Service(load_settings(config), config_path=config, runtime=fake_runtime(), sink=sink)


def events(recorder) -> list[dict]:
    return [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]


def media_id(recorder) -> str | None:
    return next((e["id"] for e in events(recorder) if e.get("id", "").startswith("upnp-")), None)


def kinds(recorder, ann_id: str) -> list[str]:
    return [e["event"] for e in events(recorder) if e.get("id") == ann_id]


def wait_event(recorder, ann_id_of, event: str, count: int = 1) -> None:
    recorder.wait_for(lambda _: (i := ann_id_of()) is not None and kinds(recorder, i).count(event) >= count,
                      WAIT_S)  # fmt: skip


async def discover(service: Service) -> str:
    """The renderer's description URL as an SSDP search on loopback answers it (Home Assistant's way)."""
    found: asyncio.Future = asyncio.get_running_loop().create_future()

    async def on_response(headers) -> None:
        if headers.get("location") == service.servers.renderer.description_url and not found.done():
            found.set_result(headers["location"])

    listener = SsdpSearchListener(on_response, source=("127.0.0.1", 0), search_target=DEVICE_TYPE)
    await listener.async_start()
    try:
        async with asyncio.timeout(WAIT_S):
            while not found.done():  # M-SEARCH is UDP: ask again until the answer comes
                listener.async_search()
                await asyncio.wait({found}, timeout=1.0)
    finally:
        listener.async_stop()
    return found.result()


async def controller(service: Service, location: str | None = None):
    """A media server on 127.0.0.1 and Home Assistant's DmrDevice on the daemon's renderer."""
    runner = web.AppRunner(media_app(asyncio.Event()), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    location = location or service.servers.renderer.description_url
    device = await UpnpFactory(AiohttpRequester()).async_create_device(location)
    dmr = DmrDevice(device, None)
    await dmr.async_update()
    return runner, base, dmr


async def play(dmr: DmrDevice, url: str, title: str) -> None:
    """What Home Assistant's dlna_dmr does for play_media."""
    await dmr.async_set_transport_uri(url, title)
    await dmr.async_wait_for_can_play()
    await dmr.async_play()


async def wait_state(dmr: DmrDevice, state: TransportState) -> None:
    async with asyncio.timeout(WAIT_S):
        while dmr.transport_state != state:
            await dmr.async_update(do_ping=False)
            await asyncio.sleep(0.05)


def wav_of(directory: Path, ann_id: str) -> list[np.ndarray]:
    """The samples of each WAV file the zone wrote for `ann_id`, in order."""
    out = []
    for path in sorted(directory.glob(f"*-{ann_id}.wav")):
        with wave.open(str(path)) as wav:
            assert wav.getframerate() == MODEL_RATE
            out.append(np.frombuffer(wav.readframes(wav.getnframes()), "<i2").astype(np.float32) / 32768)
    return out


def tone_hz(samples: np.ndarray) -> float:
    return float(np.argmax(np.abs(np.fft.rfft(samples))) * MODEL_RATE / len(samples))


@pytest.fixture
def announcing(tmp_path, mosquitto):
    svc = make_service(tmp_path, mosquitto, announce_sources=["127.0.0.1"], ssdp=True)
    start_subscribed(svc)
    yield svc
    svc.stop()


def test_home_assistant_plays_a_url_heard_in_the_wav_zone_as_an_announcement_at_its_volume(
    announcing, mosquitto, recorder_factory, tmp_path
):
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])

    async def scenario():
        runner, base, dmr = await controller(announcing, await discover(announcing))
        try:
            await dmr.async_set_volume_level(0.5)  # gain 0.25: the renderer's own, not the box's
            await play(dmr, f"{base}/hello.wav", "Doorbell")
            await asyncio.to_thread(wait_event, recorder, lambda: media_id(recorder), "finished")
            await wait_state(dmr, TransportState.STOPPED)
        finally:
            await runner.cleanup()

    asyncio.run(scenario())
    ann_id = media_id(recorder)
    assert kinds(recorder, ann_id) == ["queued", "started", "first_audio", "finished"]
    [heard] = wav_of(tmp_path / "wav", ann_id)
    assert abs(len(heard) - MODEL_RATE) <= MODEL_RATE * 0.01  # the 1 s of hello.wav, resampled
    assert abs(tone_hz(heard) - TONE_HZ) < 5
    middle = heard[len(heard) // 4 : -len(heard) // 4]
    assert np.abs(middle).max() == pytest.approx(0.5 * 0.25, abs=0.01)  # its level (0.5) at (0.5)² gain
    assert announcing.announcer.volume == pytest.approx(1.0)  # the master volume is untouched
    assert not list((tmp_path / "spool").glob("*.json"))  # media is never spooled

    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "after", "text": "Still here."}), qos=1)
    wait_event(recorder, lambda: "after", "finished")


def test_a_stream_is_cut_by_an_mqtt_emergency_and_resumes_where_it_was_cut_at_the_new_volume(
    tmp_path, mosquitto, recorder_factory
):
    sink = GatedWavSink(tmp_path / "wav", after=int(1.5 * MODEL_RATE))  # inside its second segment
    service = make_service(tmp_path, mosquitto, sink=sink)  # no announce source: a stream
    start_subscribed(service)
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])

    async def scenario():
        runner, base, dmr = await controller(service)
        try:
            await play(dmr, f"{base}/long.wav", "Music")
            assert await asyncio.to_thread(sink.reached.wait, WAIT_S)  # the stream sounds, held mid-way
            await wait_state(dmr, TransportState.PLAYING)
            await dmr.async_set_volume_level(0.3)  # gain 0.09 from now on
            say = {"id": "alarm", "text": "Fire alarm. Leave the building now.", "priority": "emergency"}
            recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(say), qos=1)
            await asyncio.to_thread(wait_event, recorder, lambda: "alarm", "queued")
            assert await asyncio.to_thread(service.announcer.applied, WAIT_S)  # its turn (the cut) is over
            sink.release.set()
            await asyncio.to_thread(wait_event, recorder, lambda: media_id(recorder), "finished")
            await wait_state(dmr, TransportState.STOPPED)
        finally:
            sink.release.set()
            await runner.cleanup()

    try:
        asyncio.run(scenario())
    finally:
        service.stop()
    ann_id = media_id(recorder)
    assert kinds(recorder, ann_id) == ["queued", "started", "first_audio", "queued", "started",
                                       "first_audio", "finished"]  # fmt: skip
    requeued = [e for e in events(recorder) if e.get("id") == ann_id and e["event"] == "queued"][1]
    at = int(re.fullmatch(r"an emergency announcement barged in; resumes at (\d+) s", requeued["reason"])[1])
    assert at == 1  # the segment it was in when the emergency came
    order = [(e["id"], e["event"]) for e in events(recorder) if e["event"] in ("started", "finished")]
    assert order.index(("alarm", "finished")) < order.index((ann_id, "started"), 1)  # resumed after it
    [resumed] = wav_of(tmp_path / "wav", ann_id)  # the cut play left no file; the resumed one is whole
    assert abs(len(resumed) - (LONG_S - at) * MODEL_RATE) <= MODEL_RATE * 0.01  # from where it was cut
    assert abs(tone_hz(resumed) - TONE_HZ) < 5
    middle = resumed[len(resumed) // 4 : -len(resumed) // 4]
    assert np.abs(middle).max() == pytest.approx(0.5 * 0.09, abs=0.01)  # at the volume set meanwhile
    assert wav_of(tmp_path / "wav", "alarm")
