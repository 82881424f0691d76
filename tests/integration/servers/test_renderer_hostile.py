"""Nothing a network peer sends to the renderer stops it: hostile SOAP bodies, oversized and slow
requests, subscriptions that would make it call a third host. Each is refused (an HTTP status or a
UPnP error), and the renderer answers Home Assistant's client afterwards."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
from aiohttp import web
from async_upnp_client.exceptions import UpnpError
from async_upnp_client.profiles.dlna import TransportState
from renderer_rig import WAIT_S, renderer_rig

AVT = "urn:schemas-upnp-org:service:AVTransport:1"
RCS = "urn:schemas-upnp-org:service:RenderingControl:1"


def soap(action: str, args: str, service: str = AVT) -> str:
    return (
        '<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
        's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>'
        f'<u:{action} xmlns:u="{service}">{args}</u:{action}></s:Body></s:Envelope>'
    )


BOMB = (
    '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/">'
    '<s:Body><u:Play xmlns:u="urn:schemas-upnp-org:service:AVTransport:1"><InstanceID>&c;</InstanceID>'
    "</u:Play></s:Body></s:Envelope>"
)


def upnp_code(body: str) -> int | None:
    start = body.find("<errorCode>")
    return int(body[start + 11 : body.index("</errorCode>")]) if start >= 0 else None


def test_hostile_control_requests_are_refused_and_the_renderer_goes_on():
    cases = [  # (service, action, body, what must come back)
        ("AVTransport", "Play", "not xml at all", 400),
        ("AVTransport", "Play", BOMB, 400),  # entities are refused by defusedxml
        ("AVTransport", "Play", soap("Play", "<InstanceID>abc</InstanceID><Speed>1</Speed>"), 402),
        ("AVTransport", "Play", soap("Play", "<InstanceID>7</InstanceID><Speed>1</Speed>"), 718),
        ("AVTransport", "Play", soap("Play", "<InstanceID>0</InstanceID><Speed>1</Speed>"), 701),  # no URI
        ("AVTransport", "Play", soap("Play", "<InstanceID>0</InstanceID><Speed>4</Speed>"), 402),
        ("AVTransport", "Eject", soap("Eject", "<InstanceID>0</InstanceID>"), 400),
        ("AVTransport", "Play", soap("Play", "<Bogus>0</Bogus>"), 400),
        (
            "RenderingControl",
            "SetVolume",
            soap(
                "SetVolume",
                "<InstanceID>0</InstanceID><Channel>Master</Channel><DesiredVolume>101</DesiredVolume>",
                RCS,
            ),
            402,
        ),
        (
            "RenderingControl",
            "SetVolume",
            soap(
                "SetVolume",
                "<InstanceID>0</InstanceID><Channel>Master</Channel><DesiredVolume>-1</DesiredVolume>",
                RCS,
            ),
            402,
        ),
        ("AVTransport", "Play", soap("Play", "<InstanceID>0</InstanceID>" + "x" * 100_000), 413),
    ]

    async def scenario(rig):
        base = rig.servers.renderer.description_url.rsplit("/", 1)[0]
        answers = []
        async with aiohttp.ClientSession() as session:
            for service, action, body, _ in cases:
                headers = {
                    "SOAPAction": f'"urn:schemas-upnp-org:service:{service}:1#{action}"',
                    "Content-Type": 'text/xml; charset="utf-8"',
                }
                async with session.post(
                    f"{base}/upnp/control/{service}", data=body, headers=headers
                ) as answer:
                    text = await answer.text()
                    answers.append(upnp_code(text) if answer.status == 500 else answer.status)
        await rig.dmr.async_set_volume_level(0.2)
        await rig.play("/hello.wav")  # the renderer still plays for Home Assistant
        await rig.wait_state(TransportState.PLAYING)
        return answers, rig.dmr

    answers, dmr = run(scenario)
    assert answers == [expected for *_, expected in cases]
    assert dmr.volume_level == 0.2  # no hostile SetVolume got through


def test_a_body_that_never_arrives_is_dropped_after_the_read_timeout():
    async def scenario(rig):
        host, port = rig.servers.renderer.description_url.split("/")[2].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /upnp/control/AVTransport HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
            b'SOAPAction: "urn:schemas-upnp-org:service:AVTransport:1#Play"\r\n\r\n<s:Env'
        )
        await writer.drain()
        async with asyncio.timeout(WAIT_S):
            status = await reader.readline()
        writer.close()
        await rig.dmr.async_update()
        return status, rig.dmr.transport_state

    status, state = run(scenario, "servers.read_timeout_s=0.5")
    assert status.startswith(b"HTTP/1.1 408")
    assert state == TransportState.NO_MEDIA_PRESENT  # and it still answers


def test_connections_over_the_per_client_cap_get_a_503_and_the_renderer_serves_again_after():
    async def scenario(rig):
        host, port = rig.servers.renderer.description_url.split("/")[2].split(":")
        # The rig's own client closes each connection after its request, but the renderer counts one
        # until its loop sees the close: on a busy machine that took a slot of the cap, a held
        # connection was refused in its place, and the one "over" the cap was let in when the slot
        # came free (no 503). The renderer's count is the state to wait for.
        gate = rig.servers.renderer.listener.gate
        async with asyncio.timeout(WAIT_S):
            while gate.open:
                await asyncio.sleep(0.01)
        held = [await asyncio.open_connection(host, int(port)) for _ in range(2)]
        async with asyncio.timeout(WAIT_S):
            while gate.open < 2:  # both admitted before the next one comes
                await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection(host, int(port))  # one over the cap
        async with asyncio.timeout(WAIT_S):
            refused = await reader.read()
        for _, held_writer in [*held, (reader, writer)]:
            held_writer.close()
            await held_writer.wait_closed()
        async with asyncio.timeout(WAIT_S):
            while True:  # the slots come free as the renderer sees the closes
                try:
                    await rig.dmr.async_update()
                    return refused, rig.dmr.transport_state
                except UpnpError:
                    await asyncio.sleep(0.1)

    refused, state = run(scenario, "servers.max_connections_per_client=2")
    assert refused.startswith(b"HTTP/1.1 503") and b"max_connections_per_client" in refused
    assert state == TransportState.NO_MEDIA_PRESENT


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_timeout():
    async def scenario(rig):
        host, port = rig.servers.renderer.description_url.split("/")[2].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        async with asyncio.timeout(WAIT_S):
            closed = await reader.read()
        writer.close()
        return closed

    assert run(scenario, "servers.idle_timeout_s=0.5") == b""


def test_subscriptions_only_call_back_the_subscriber_and_are_bounded():
    async def scenario(rig):
        url = rig.servers.renderer.description_url.rsplit("/", 1)[0] + "/upnp/event/AVTransport"
        statuses = []
        async with aiohttp.ClientSession() as session:
            for callback, timeout in [
                ("<http://192.0.2.1:8080/evil>", "Second-300"),  # a third host
                ("<file:///etc/passwd>", "Second-300"),
                ("", "Second-300"),
                ("<http://127.0.0.1:9/cb>", "Second-infinite"),
            ]:
                headers = {"CALLBACK": callback, "NT": "upnp:event", "TIMEOUT": timeout}
                async with session.request("SUBSCRIBE", url, headers=headers) as answer:
                    statuses.append(answer.status)
            accepted = await subscribe_many(session, url, 20)  # their listener is gone after this
            await rig.play("/hello.wav")  # events: the 16 callbacks fail and are dropped
            await rig.wait_state(TransportState.PLAYING)
            async with asyncio.timeout(WAIT_S):
                while await subscribe_many(session, url, 1) != [200]:  # room again once they are dropped
                    await asyncio.sleep(0.1)
        return statuses, accepted

    statuses, accepted = run(scenario)
    assert statuses == [412, 412, 412, 412]
    assert accepted == [200] * 16 + [412] * 4  # at most 16 subscribers per service
    # and a subscriber whose callback fails is dropped: the scenario subscribed once more at the end


def test_a_busy_port_or_an_open_bind_is_a_config_error_naming_the_setting():
    import pytest
    from renderer_rig import RecordingOutlet, renderer_settings

    from qwen3tts.errors import ConfigError
    from qwen3tts.servers import start_servers

    with pytest.raises(ConfigError, match=r"servers\.renderer\.allow_network"):
        start_servers(
            renderer_settings("servers.renderer.host=0.0.0.0"), None, None, outlet=RecordingOutlet()
        )
    with pytest.raises(ConfigError, match=r"servers\.renderer\.host: ::1 is IPv6"):
        start_servers(renderer_settings("servers.renderer.host=::1"), None, None, outlet=RecordingOutlet())
    with pytest.raises(ConfigError, match=r"servers\.renderer\.enabled"):
        start_servers(renderer_settings(), None, None)  # no outlet wired
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=r"servers\.renderer\.port"):
            start_servers(
                renderer_settings(f"servers.renderer.port={port}"), None, None, outlet=RecordingOutlet()
            )
    finally:
        taken.close()


async def subscribe_many(session, url: str, count: int) -> list[int]:
    """`count` subscriptions from a listener that takes its NOTIFYs, as Home Assistant's does."""
    listener = web.Application()
    listener.router.add_route("NOTIFY", "/cb", _took)
    runner = web.AppRunner(listener, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    statuses = []
    try:
        for _ in range(count):
            headers = {
                "CALLBACK": f"<http://127.0.0.1:{port}/cb>",
                "NT": "upnp:event",
                "TIMEOUT": "Second-60",
            }
            async with session.request("SUBSCRIBE", url, headers=headers) as answer:
                statuses.append(answer.status)
    finally:
        await runner.cleanup()
    return statuses


async def _took(request):
    return web.Response()


def run(scenario, *overrides: str):
    async def main():
        async with renderer_rig(*overrides) as rig:
            return await scenario(rig)

    return asyncio.run(main())
