"""Time to first audio over the Wyoming and HTTP servers, at 1 and 4 concurrent clients.

Starts the real engine and both servers in this process on free loopback ports, then for each server
and concurrency runs `--rounds` rounds of N simultaneous requests with real clients (the `wyoming`
package's AsyncTcpClient, httpx streaming each of `--formats`) and prints the median and worst time
from sending the request to the first bytes of audio, plus the engine's mean batch. Every request
speaks a sentence of its own (`Platform <n>, gate <m>: ...`, as `qwen3tts bench` does).

    PYTHONPATH=daemon .venv/bin/python scripts/bench_servers.py               # a tiny random bundle
    PYTHONPATH=daemon .venv/bin/python scripts/bench_servers.py --bundle var/bundle-0.6b
    PYTHONPATH=daemon .venv/bin/python scripts/bench_servers.py --formats mp3,opus --skip-wyoming
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import httpx
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from qwen3tts.bench.ports import free_port
from qwen3tts.bench.workload import ttfa_sentence
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.servers import Offer, start_servers
from qwen3tts.settings_loader import load_settings

# Every request speaks a sentence of its own, as new announcements do: with one sentence for all, the
# prefix cache held its first block after the first request and the figures were cache hits.
SENTENCES = itertools.count()


async def wyoming_ttfa(port: int) -> float:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        started = time.perf_counter()
        await client.write_event(Synthesize(text=ttfa_sentence(next(SENTENCES))).event())
        first = None
        while (event := await client.read_event()) is not None:
            if first is None and event.type == "audio-chunk":
                first = time.perf_counter() - started
            if event.type == "audio-stop":
                return first


async def http_ttfa(port: int, fmt: str = "pcm") -> float:
    async with httpx.AsyncClient(timeout=300) as client:
        started = time.perf_counter()
        body = {"model": "qwen3tts", "input": ttfa_sentence(next(SENTENCES)), "response_format": fmt}
        async with client.stream("POST", f"http://127.0.0.1:{port}/v1/audio/speech", json=body) as response:
            first = None
            async for _ in response.aiter_raw():
                first = first or time.perf_counter() - started
            return first


async def measure(one, port: int, concurrency: int, rounds: int) -> list[float]:
    times: list[float] = []
    for _ in range(rounds):
        times += await asyncio.gather(*(one(port) for _ in range(concurrency)))
    return times


def tiny_bundle(root: Path) -> Path:
    from qwen3tts.model.build import build_bundle
    from qwen3tts.model.tiny import write_checkpoint

    checkpoint = write_checkpoint(root / "ckpt", variant="custom_voice", shape="tiny")
    build_bundle(checkpoint, root / "bundle", weights="f32", report=lambda line: None)
    return root / "bundle"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundle", type=Path, help="bundle directory (default: build a tiny random one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="settings override")
    parser.add_argument("--formats", default="pcm", help="HTTP response formats, comma-separated")
    parser.add_argument("--skip-wyoming", action="store_true")
    args = parser.parse_args()
    doors = [] if args.skip_wyoming else [("wyoming", wyoming_ttfa, "wyoming_port")]
    doors += [(f"http {fmt}", partial(http_ttfa, fmt=fmt), "http_port") for fmt in args.formats.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        bundle = args.bundle or tiny_bundle(Path(tmp))
        settings = load_settings(None, [
            "servers.wyoming.enabled=true", f"servers.wyoming.port={free_port()}",
            "servers.http.enabled=true", f"servers.http.port={free_port()}",
            "servers.max_concurrent_requests=4", *args.set,
        ])  # fmt: skip
        runtime = load_runtime(bundle, settings)
        runtime.engine.start()
        offer = Offer.from_spec(bundle.name, runtime.spec, settings.voice)
        servers = start_servers(settings, runtime.engine, offer)
        try:
            asyncio.run(measure(http_ttfa, servers.http_port, 1, 1))  # warm-up: first compile-time effects
            print(f"bundle {bundle.name}, a new sentence per request, {args.rounds} rounds")
            for name, one, port_name in doors:
                port = getattr(servers, port_name)
                for concurrency in (1, 4):
                    before = runtime.engine.stats()
                    times = asyncio.run(measure(one, port, concurrency, args.rounds))
                    after = runtime.engine.stats()
                    steps = after.num_steps - before.num_steps
                    batch = (after.num_frames - before.num_frames) / steps if steps else 0.0
                    median, worst = 1000 * statistics.median(times), 1000 * max(times)
                    print(f"{name:9s} {concurrency} client(s): first audio median {median:6.0f} ms, "
                          f"worst {worst:6.0f} ms, mean batch {batch:.2f}")  # fmt: skip
        finally:
            servers.stop()
            runtime.engine.stop()


if __name__ == "__main__":
    main()
