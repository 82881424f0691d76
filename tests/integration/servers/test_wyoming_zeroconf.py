"""The Wyoming server announces itself over mDNS (`_wyoming._tcp`) as Home Assistant discovers it: a
zeroconf browser on loopback finds it, resolves its address and port, and `describe` there answers;
stopping the server says goodbye. Everything stays on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest
from mosquitto_broker import free_port
from wyoming.info import Describe, Info
from wyoming_client import ask
from zeroconf import IPVersion, ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from qwen3tts.errors import ConfigError
from qwen3tts.servers.wyoming_zeroconf import SERVICE_TYPE, announced_address, instance_name

FOUND_WITHIN_S = 15.0


class Browser:
    """What Home Assistant's zeroconf discovery sees of `_wyoming._tcp` on loopback."""

    def __init__(self):
        self.changes: list[tuple[str, ServiceStateChange]] = []
        self._changed = asyncio.Event()

    def on_change(self, zeroconf, service_type, name, state_change) -> None:
        self.changes.append((name, state_change))
        self._changed.set()

    async def wait_for(self, name: str, state: ServiceStateChange) -> None:
        async with asyncio.timeout(FOUND_WITHIN_S):
            while (name, state) not in self.changes:
                self._changed.clear()
                await self._changed.wait()


def test_home_assistant_finds_the_server_by_zeroconf_and_describe_answers_there(fake_serve):
    async def browse(start_server):
        browser = Browser()
        zeroconf = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        watching = AsyncServiceBrowser(zeroconf.zeroconf, SERVICE_TYPE, handlers=[browser.on_change])
        try:
            running = await asyncio.to_thread(start_server)
            name = f"qwen3tts-test-{running.servers.wyoming_port}.{SERVICE_TYPE}"
            await browser.wait_for(name, ServiceStateChange.Added)
            info = AsyncServiceInfo(SERVICE_TYPE, name)
            assert await info.async_request(zeroconf.zeroconf, 3000)
            answer = await ask(info.port, [Describe().event()], "info")  # where Home Assistant connects
            await asyncio.to_thread(running.servers.stop)
            await browser.wait_for(name, ServiceStateChange.Removed)  # the goodbye at stop
            return running, info, answer
        finally:
            await watching.async_cancel()
            await zeroconf.async_close()

    def start_server():
        port = free_port()
        return fake_serve(f"servers.wyoming.port={port}", "servers.wyoming.zeroconf=true",
                          f"servers.wyoming.zeroconf_name=qwen3tts-test-{port}")  # fmt: skip

    running, info, answer = asyncio.run(browse(start_server))
    assert info.port == running.servers.wyoming_port
    assert info.parsed_addresses() == ["127.0.0.1"]  # a loopback server is announced on loopback only
    [program] = Info.from_event(answer[-1]).tts
    assert program.name == "qwen3tts"  # Home Assistant names the entry after it


def test_an_unusable_instance_name_is_a_config_error_naming_the_key():
    for bad in ("", "a" * 64, "with.dot", "tab\there"):
        with pytest.raises(ConfigError, match=r"servers\.wyoming\.zeroconf_name"):
            instance_name(bad)
    assert instance_name("Kitchen speaker") == "Kitchen speaker"
    assert instance_name(None).startswith("qwen3tts-")


def test_the_announced_address_is_the_bound_one_and_loopback_stays_loopback():
    assert announced_address("127.0.0.1") == "127.0.0.1"
    assert announced_address("localhost") == "127.0.0.1"
    assert announced_address("192.168.1.20") == "192.168.1.20"
    with pytest.raises(ConfigError, match=r"servers\.wyoming\.host"):
        announced_address("::1")
