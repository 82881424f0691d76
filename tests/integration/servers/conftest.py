"""The servers in-process over the real engine on the tiny OpenVINO bundle, on free loopback ports."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
from announcer_rig import LoudRunner, fake_engine
from mosquitto_broker import free_port

from qwen3tts.runtime.loader import load_runtime
from qwen3tts.servers import Offer, Servers, start_servers
from qwen3tts.settings_loader import load_settings

# Short sentences by default: the tiny model on a busy CI core makes ~15 frames per second. Greedy
# talker sampling never picks the tiny model's end token, so every request runs to its frame budget
# (a long request stays long, which the cancel, busy and preemption tests rely on).
QUICK = ("engine.max_frames=30", "engine.temperature=0", "servers.wyoming.zeroconf=false")


class Running:
    """A started engine + servers, with every engine handle the servers got (to check cancellation)."""

    def __init__(self, runtime, servers: Servers, settings):
        self.runtime = runtime
        self.engine = runtime.engine
        self.servers = servers
        self.settings = settings
        self.handles = []
        self.requests = []
        submit = self.engine.submit

        def recording_submit(request):
            handle = submit(request)
            self.requests.append(request)
            self.handles.append(handle)
            return handle

        self.engine.submit = recording_submit  # handles capture the engine's cancel, not this wrapper

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.servers.http_port}"

    def wait_idle(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = self.engine.stats()
            if stats.num_running == 0 and stats.num_waiting == 0:
                return True
            time.sleep(0.02)
        return False

    def outcomes(self, server: str) -> dict[str, float]:
        from prometheus_client.parser import text_string_to_metric_families

        text = self.servers.metrics.render().decode()
        found = {}
        for family in text_string_to_metric_families(text):
            if family.name == "qwen3tts_network_requests":
                for sample in family.samples:
                    if sample.name.endswith("_total") and sample.labels["server"] == server:
                        found[sample.labels["outcome"]] = sample.value
        return found


@pytest.fixture(scope="module")
def tiny_bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "f32")


@pytest.fixture
def serve(tiny_bundle) -> Iterator[Callable[..., Running]]:
    """serve(*overrides, metrics_source=None, environ=None) -> Running, with both servers on free ports."""
    started: list[Running] = []

    def start(*overrides: str, metrics_source=None, environ=None) -> Running:
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
        runtime = load_runtime(tiny_bundle, settings)
        runtime.engine.start()
        offer = Offer.from_spec(tiny_bundle.name, runtime.spec, settings.voice)
        try:
            servers = start_servers(settings, runtime.engine, offer, metrics_source, environ=environ or {})
        except BaseException:
            runtime.engine.stop()
            raise
        started.append(Running(runtime, servers, settings))
        return started[-1]

    yield start
    for running in started:
        running.servers.stop()
        running.engine.stop()


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


FAKE_SPEC = SimpleNamespace(
    variant="custom_voice", size="0b6", speakers=("vivian", "ryan"), languages=("english", "german")
)


class FakeRunning(Running):
    """Servers over the real Engine on the fake runner: the real server code, PCM in milliseconds."""

    def __init__(self, engine, servers: Servers, settings):
        super().__init__(SimpleNamespace(engine=engine, spec=FAKE_SPEC), servers, settings)

    def active(self) -> float:
        """The active-request gauge (qwen3tts_network_active_requests)."""
        return self.servers.metrics.registry.get_sample_value("qwen3tts_network_active_requests")


@pytest.fixture
def fake_serve() -> Iterator[Callable[..., FakeRunning]]:
    """fake_serve(*overrides, frames=24) -> FakeRunning: the Wyoming server only, on a free port; each
    request runs about `frames` frames (LoudRunner's end token), `engine.max_frames` caps it."""
    started: list[FakeRunning] = []

    def start(*overrides: str, frames: int = 24) -> FakeRunning:
        settings = load_settings(
            None,
            ["servers.wyoming.enabled=true", f"servers.wyoming.port={free_port()}",
             "servers.wyoming.zeroconf=false", *overrides],
        )  # fmt: skip
        engine = fake_engine(LoudRunner(eos_at=frames, num_kv_blocks=max(64, frames)))
        engine.start()
        offer = Offer.from_spec("fake", FAKE_SPEC, settings.voice)
        servers = start_servers(settings, engine, offer, environ={})
        started.append(FakeRunning(engine, servers, settings))
        return started[-1]

    yield start
    for running in started:
        running.servers.stop()
        running.engine.stop()
