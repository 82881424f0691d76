"""Servers started in-process for tests: `Running` (engine + servers + every engine handle they got) and
`start_fake_servers`, the real servers over the real Engine on the fake runner (PCM in milliseconds)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from announcer_rig import LoudRunner, fake_engine
from endless import without_end
from mosquitto_broker import free_port

from qwen3tts.servers import Offer, Servers, start_servers
from qwen3tts.settings_loader import load_settings
from qwen3tts.text import warm_up


class Running:
    """A started engine + servers, with every engine handle the servers got (to check cancellation)."""

    def __init__(self, runtime, servers: Servers, settings):
        self.runtime = runtime
        self.engine = runtime.engine
        self.servers = servers
        self.settings = settings
        self.handles = []
        self.requests = []
        self.without_end = False
        """Set by a test that needs its synthesis still running (to cut it off): every request then runs to
        its frame cap, since the tiny random model may sample its end of speech at any frame."""
        submit = self.engine.submit

        def recording_submit(request):
            if self.without_end:
                request = without_end(request)
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


def start_fake_servers(*overrides: str, frames: int = 24, text=None) -> tuple[FakeRunning, callable]:
    """The Wyoming server alone on a free port (zeroconf off unless overridden) -> (running, stop). Each
    request runs about `frames` frames (LoudRunner's end token); `engine.max_frames` caps it. `text`: the
    servers' TextOptions (default: the front end in-process)."""
    settings = load_settings(
        None,
        ["servers.wyoming.enabled=true", f"servers.wyoming.port={free_port()}",
         "servers.wyoming.zeroconf=false", *overrides],
    )  # fmt: skip
    engine = fake_engine(LoudRunner(eos_at=frames, num_kv_blocks=max(64, frames)))
    engine.start()
    offer = Offer.from_spec("fake", FAKE_SPEC, settings.voice)
    # As the daemon does at start (service/front_end.py): otherwise the first request builds the language
    # identifier (seconds) on the servers' event loop, and every timeout of that connection runs late.
    warm_up()
    servers = start_servers(settings, engine, offer, environ={}, text=text)
    running = FakeRunning(engine, servers, settings)

    def stop() -> None:
        servers.stop()
        engine.stop()

    return running, stop
