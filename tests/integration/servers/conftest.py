"""The servers in-process over the real engine on the tiny OpenVINO bundle, on free loopback ports."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from mosquitto_broker import free_port
from runtime_shelf import RuntimeShelf
from server_rig import FakeRunning, Running, start_fake_servers

from qwen3tts.runtime.loader import load_runtime
from qwen3tts.servers import Offer, start_servers
from qwen3tts.settings_loader import load_settings

# Short sentences by default: the tiny model on a busy CI core makes ~15 frames per second. Greedy
# talker sampling never picks the tiny model's end token, so every request runs to its frame budget
# (a long request stays long, which the cancel, busy and preemption tests rely on).
QUICK = ("engine.max_frames=30", "engine.temperature=0", "servers.wyoming.zeroconf=false")


@pytest.fixture(scope="module")
def tiny_bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "f32")


@pytest.fixture(scope="module")
def shelf() -> RuntimeShelf:
    """The module's loaded runtimes: a test's servers get one with an engine of their own."""
    return RuntimeShelf()


def _starter(tiny_bundle, shelf: RuntimeShelf, started: list[Running]) -> Callable[..., Running]:
    def start(*overrides: str, metrics_source=None, environ=None, console=None) -> Running:
        settings = load_settings(
            None,
            [
                *QUICK,
                "servers.wyoming.enabled=true",
                f"servers.wyoming.port={free_port()}",
                "servers.http.enabled=true",
                f"servers.http.port={free_port()}",
                *overrides,
            ],
        )
        runtime = shelf.lend(tiny_bundle, settings)
        runtime.engine.start()
        offer = Offer.from_spec(tiny_bundle.name, runtime.spec, settings.voice)
        try:
            servers = start_servers(settings, runtime.engine, offer, metrics_source, environ=environ or {},
                                    console=console)  # fmt: skip
        except BaseException:
            runtime.engine.stop()
            shelf.give_back(tiny_bundle, settings, runtime)
            raise
        started.append(Running(runtime, servers, settings))
        return started[-1]

    return start


def _stop(tiny_bundle, shelf: RuntimeShelf, started: list[Running]) -> None:
    for running in started:
        running.servers.stop()
        running.engine.stop()
        shelf.give_back(tiny_bundle, running.settings, running.runtime)


@pytest.fixture
def serve(tiny_bundle, shelf) -> Iterator[Callable[..., Running]]:
    """serve(*overrides, metrics_source=None, environ=None, console=None) -> Running, with both servers
    on free ports."""
    started: list[Running] = []
    yield _starter(tiny_bundle, shelf, started)
    _stop(tiny_bundle, shelf, started)


@pytest.fixture(scope="module")
def serve_module(tiny_bundle, shelf) -> Iterator[Callable[..., Running]]:
    """serve() for servers a whole module shares."""
    started: list[Running] = []
    yield _starter(tiny_bundle, shelf, started)
    _stop(tiny_bundle, shelf, started)


@pytest.fixture(scope="module")
def serve_once(tiny_bundle) -> Iterator[Running]:
    """One default Running shared by a module's tests that never start synthesis."""
    settings = load_settings(None, [*QUICK, "servers.http.enabled=true", f"servers.http.port={free_port()}"])
    runtime = load_runtime(tiny_bundle, settings)
    runtime.engine.start()
    offer = Offer.from_spec(tiny_bundle.name, runtime.spec, settings.voice)
    servers = start_servers(settings, runtime.engine, offer, environ={})
    yield Running(runtime, servers, settings)
    servers.stop()
    runtime.engine.stop()


@pytest.fixture
def fake_serve() -> Iterator[Callable[..., FakeRunning]]:
    """fake_serve(*overrides, frames=24) -> FakeRunning (server_rig.start_fake_servers), stopped after."""
    stops = []

    def start(*overrides: str, frames: int = 24) -> FakeRunning:
        running, stop = start_fake_servers(*overrides, frames=frames)
        stops.append(stop)
        return running

    yield start
    for stop in stops:
        stop()


@pytest.fixture
def browser():
    """A headless Chromium (status_page_rig.launch_chromium), closed after the test."""
    from playwright.sync_api import sync_playwright
    from status_page_rig import launch_chromium

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        yield browser
        browser.close()
