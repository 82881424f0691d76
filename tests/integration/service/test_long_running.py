"""One `qwen3tts run` as an appliance runs for months (issue 37): its memory does not grow with the
requests it answers, and its temporary files stay in its own runtime directory.

The short form of scripts/soak.py: announcements over MQTT, HTTP and Wyoming requests, each sent once
the one before it was answered (no rate, so no verdict depends on the machine's speed), the daemon's
RSS read from /proc after each round, the verdict the median of the slopes between samples two rounds
apart (glibc's steps of a few hundred KB, a handful per run, do not move it). The leak of issue 37
(about 13 KB per request) fails it; what the daemon as it is measured is in docs/benchmarks.md,
"Flat memory: the soak"."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from daemon_process import DaemonProcess
from mosquitto_broker import free_port
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from qwen3tts.bench.process_usage import median_slope_per_1000, usage

pytestmark = pytest.mark.slow
SITE = "longrun"
WARM_UP_ROUNDS = 40
MEASURED_ROUNDS = 40
"""Each round is 3 MQTT announcements, 1 HTTP and 1 Wyoming request: 200 requests to warm up (the
bounded caches and the allocator's first growth: the RSS of a flat daemon still rises over them), then
200 measured."""
MAX_MB_PER_1000 = 10.0
"""The leak of issue 37 was about 13 MB per 1000 requests (a leak of that size injected here measured
15-16); the daemon as it is measured 2-3 (docs/benchmarks.md). The soak's target is 0.1 over
thousands of requests; these 200 synthesised requests still see glibc's slow creep."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_models):
    from mosquitto_broker import Mosquitto

    root = tmp_path_factory.mktemp("longrun")
    broker = Mosquitto(root, persistence=False)
    broker.start()
    http, wyoming = free_port(), free_port()
    (root / "tmp").mkdir()
    process = DaemonProcess(root, {
        "model": {"bundle": str(tiny_models.bundle("custom_voice", "tiny", "f32"))},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "audio": {"sink": "wav", "lead_in_ms": 0, "tail_ms": 0},
        "thermal": {"enabled": False},
        "engine": {"max_frames": 8},
        # the bounded per-request memories full within the warm-up, so what they hold is not growth:
        # 30 ids (the default window of 1000 would fill over the whole test), a 2 MiB phrase cache
        # (about 40 of these tiny-bundle announcements); the sinks keep 100 names, the status page 50 events
        "announcements": {"dedup_window": 30},
        "cache": {"max_bytes": 2 * 2**20},
        "servers": {"http": {"enabled": True, "port": http}, "wyoming": {"enabled": True, "port": wyoming}},
    }, env={"TMPDIR": str(root / "tmp"), "XDG_RUNTIME_DIR": str(root / "run")})  # fmt: skip
    yield process, broker, http, wyoming
    process.kill()
    broker.stop()


@pytest.fixture(scope="module")
def online(daemon):
    from mosquitto_broker import Recorder

    process, broker, http, wyoming = daemon
    recorder = Recorder(broker, [f"qwen3tts/{SITE}/availability", f"qwen3tts/{SITE}/event"])
    try:
        recorder.wait_for(lambda msgs: any(m.payload == b"online" for m in msgs), 300)
    except BaseException:
        print(process.log_tail())
        raise
    yield process, recorder, http, wyoming
    recorder.close()


def test_temporary_files_go_to_the_daemons_runtime_directory(online):
    process = online[0]
    assert list((process.dir / "tmp").iterdir()) == []  # what $TMPDIR (else /tmp) would have held
    made = [p.name for p in (process.dir / "run" / "qwen3tts").iterdir()]
    assert any(name.startswith("pymp-") for name in made), made  # the text front end's forkserver socket


def test_memory_stays_flat_over_requests_of_every_door(online):
    process, recorder, http, wyoming = online
    counter = iter(range(1_000_000))
    for _ in range(WARM_UP_ROUNDS):
        one_round(recorder, http, wyoming, counter)
    points = []
    for n in range(MEASURED_ROUNDS):
        one_round(recorder, http, wyoming, counter)
        points.append((5 * n, usage(process.process.pid).rss_kib))
    grown = median_slope_per_1000(points)
    print(f"RSS slope {grown:.2f} MB per 1000 requests over {points[-1][0]} requests: {points}")
    assert grown <= MAX_MB_PER_1000, f"RSS grows {grown:.2f} MB per 1000 requests: {points}"
    assert process.running()


def one_round(recorder, http: int, wyoming: int, counter) -> None:
    """Three announcements, each waited for to its end, then one HTTP and one Wyoming request."""
    for _ in range(3):
        ann_id = f"a{next(counter)}"
        recorder.publish(
            f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": f"Train {ann_id} is due."})
        )
        recorder.wait_for(lambda msgs, i=ann_id: any(finished(m.payload, i) for m in msgs), 120)
    body = {"input": f"Request {next(counter)}.", "response_format": "wav"}
    response = httpx.post(f"http://127.0.0.1:{http}/v1/audio/speech", json=body, timeout=120)
    assert response.status_code == 200 and response.content
    asyncio.run(wyoming_request(wyoming, f"Wyoming {next(counter)}."))


def finished(payload: bytes, ann_id: str) -> bool:
    try:
        event = json.loads(payload)
    except ValueError:
        return False
    return event.get("id") == ann_id and event.get("event") == "finished"


async def wyoming_request(port: int, text: str) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text=text).event())
        while (event := await client.read_event()) is not None:
            assert event.type != "error", event.data
            if event.type == "audio-stop":
                return
    raise AssertionError("the Wyoming server closed before audio-stop")
