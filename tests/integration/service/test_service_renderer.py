"""The renderer in the running daemon (the whole Service in process, real mosquitto, the real Engine
over the fake runner): Home Assistant's DmrDevice reaches it and plays a URL; the queue does not take
audio yet, so the play is a UPnP error with the reason and one log line, and the box goes on speaking
what MQTT sends."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from aiohttp import web
from announcer_rig import RigSink, fake_runtime, start_subscribed
from async_upnp_client.aiohttp import AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.exceptions import UpnpActionResponseError
from async_upnp_client.profiles.dlna import DmrDevice, TransportState
from mosquitto_broker import free_port
from renderer_rig import media_app

from qwen3tts.service.renderer_outlet import REASON
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "upnp"


@pytest.fixture
def service(tmp_path, mosquitto):
    config = tmp_path / "qwen3tts.yaml"
    sections = {
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
        "thermal": {"enabled": False},
        "voice": {"voice": "ryan"},
        "cache": {"enabled": False},
        "servers": {"renderer": {"enabled": True, "port": free_port(), "ssdp": False}},
    }
    config.write_text(json.dumps(sections))
    svc = Service(load_settings(config), config_path=config, runtime=fake_runtime(), sink=RigSink())
    start_subscribed(svc)
    yield svc
    svc.stop()


def test_a_play_from_home_assistant_is_refused_with_the_reason_and_mqtt_still_speaks(
    service, mosquitto, recorder_factory, caplog
):
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])

    async def play_from_home_assistant():
        runner = web.AppRunner(media_app(asyncio.Event()), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        media = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/hello.wav"
        requester = AiohttpRequester()
        try:
            dmr = DmrDevice(
                await UpnpFactory(requester).async_create_device(service.servers.renderer.description_url),
                None,
            )
            await dmr.async_update()
            await dmr.async_set_transport_uri(media, "Doorbell")
            await dmr.async_wait_for_can_play()
            with pytest.raises(UpnpActionResponseError) as refused:
                await dmr.async_play()
            await dmr.async_update()
            return refused.value.error_code, dmr.transport_state
        finally:
            await runner.cleanup()

    with caplog.at_level(logging.WARNING, logger="qwen3tts.service.renderer_outlet"):
        code, state = asyncio.run(play_from_home_assistant())
    assert (code, state) == (715, TransportState.STOPPED)
    assert any(
        REASON in record.getMessage() and "Doorbell" in record.getMessage() for record in caplog.records
    )

    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "after", "text": "Still here."}), qos=1)
    recorder.wait_for(
        lambda _: any(
            json.loads(m.payload).get("id") == "after" and json.loads(m.payload)["event"] == "finished"
            for m in recorder.on(f"qwen3tts/{SITE}/event")
        ),
        60,
    )
