"""Soak: does one daemon's memory stay flat over many requests, and come back down after a flood?

Starts a mosquitto (its own, on a free loopback port, configured to queue a flood rather than drop it)
and one `qwen3tts run` (the tiny random bundle unless --bundle, WAV sink, HTTP and Wyoming on, a small
`engine.max_frames`), then:

1. **steady**: `--announcements` MQTT announcements at `--rate` per second, with `--http` HTTP and
   `--wyoming` Wyoming requests spread evenly among them, one at a time; every announcement must get
   exactly one terminal event. The daemon's RSS, open files and threads, and its child processes (the
   text front end's forkserver and workers) with their RSS, are sampled every `--sample-s` seconds;
   the slope of RSS against requests answered, after the first `--warm-up` requests, is reported in
   MB per 1000 requests (a least-squares fit over every sample after warm-up).
2. **flood** (`--flood` > 0): that many announcements published at once; once every one has its terminal
   event (most are refused `queue full` at the daemon's door, which is the point: the door's work is what
   is measured), the script waits `--settle-s` seconds and compares RSS with the level before the flood.

    PYTHONPATH=daemon .venv/bin/python scripts/soak.py                        # the issue's full run
    PYTHONPATH=daemon .venv/bin/python scripts/soak.py --announcements 300 --http 50 --flood 0

Prints one line per sample and a summary; `--json FILE` also writes every sample. Everything runs on
127.0.0.1; the work directory (a temporary one unless --workdir) holds the logs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx
import paho.mqtt.client as paho
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from qwen3tts.bench.live_daemon import daemon_config, free_port, launch_daemon, start_broker, tiny_bundle
from qwen3tts.bench.process_usage import ProcessUsage, slope_per_1000, usage

TERMINAL = {"finished", "cancelled", "expired", "rejected", "error"}
# --small-memories: the bounded per-request memories (the duplicate memory's ids, the phrase cache's index)
# small enough to be full within the warm-up, as the suite's short form has them, so that what they take
# while filling is not read as growth
SMALL_MEMORIES = {"announcements": {"dedup_window": 30}, "cache": {"max_bytes": 2 * 2**20}}
SITE = "soak"


def start_daemon(
    workdir: Path, args, broker_port: int, http_port: int, wyoming_port: int
) -> subprocess.Popen:
    config = daemon_config(
        workdir, args.bundle, SITE, (broker_port, http_port, wyoming_port), args.max_frames
    )
    for section, values in (SMALL_MEMORIES if args.small_memories else {}).items():
        config[section].update(values)
    for section, values in json.loads(args.set or "{}").items():  # e.g. {"devices": {"num_threads": 1}}
        config.setdefault(section, {}).update(values)
    return launch_daemon(workdir, config)


class Events:
    """The daemon's terminal events per announcement id, and whether it is online."""

    def __init__(self, port: int):
        self.terminal: dict[str, list[str]] = {}
        self.online = threading.Event()
        self._cond = threading.Condition()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_connect = lambda c, *_: c.subscribe([(f"qwen3tts/{SITE}/#", 1)])
        self.client.on_message = self._on_message
        self.client.max_queued_messages_set(0)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def _on_message(self, client, userdata, msg) -> None:
        if msg.topic.endswith("/availability") and msg.payload == b"online":
            self.online.set()
        if not msg.topic.endswith("/event"):
            return
        event = json.loads(msg.payload)
        if event.get("event") in TERMINAL:
            with self._cond:
                self.terminal.setdefault(event.get("id"), []).append(event["event"])
                self._cond.notify_all()

    def say(self, ann_id: str, text: str) -> None:
        body = json.dumps({"id": ann_id, "text": text})
        self.client.publish(f"qwen3tts/{SITE}/say", body, qos=1)

    def wait_answered(self, ids: list[str], timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: all(i in self.terminal for i in ids), timeout)

    def answered(self) -> int:
        with self._cond:
            return len(self.terminal)


def http_request(port: int, n: int) -> None:
    body = {"input": f"Network request number {n}.", "response_format": "wav"}
    response = httpx.post(f"http://127.0.0.1:{port}/v1/audio/speech", json=body, timeout=120)
    response.raise_for_status()


def wyoming_request(port: int, n: int) -> None:
    async def one() -> None:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Synthesize(text=f"Wyoming request number {n}.").event())
            while (event := await client.read_event()) is not None and event.type != "audio-stop":
                if event.type == "error":
                    raise RuntimeError(f"wyoming error: {event.data}")

    asyncio.run(asyncio.wait_for(one(), 120))


class Sampler(threading.Thread):
    """Samples the daemon every `every` seconds: (seconds, requests answered, usage), printed as it goes."""

    def __init__(self, pid: int, answered, every: float):
        super().__init__(daemon=True)
        self.pid, self.answered, self.every = pid, answered, every
        self.samples: list[tuple[float, int, ProcessUsage]] = []
        self.stopping = threading.Event()
        self.started_at = time.monotonic()

    def run(self) -> None:
        while not self.stopping.wait(self.every):
            self.take()

    def take(self) -> ProcessUsage:
        now = usage(self.pid)
        sample = (time.monotonic() - self.started_at, self.answered(), now)
        self.samples.append(sample)
        print(f"{sample[0]:7.0f} s {sample[1]:6d} answered  rss {now.rss_kib / 1024:7.1f} MiB"
              f"  fds {now.fds:3d}"
              f"  threads {now.threads:3d}  children {now.children} ({now.children_rss_kib / 1024:.0f} MiB)",
              flush=True)  # fmt: skip
        return now


class Steady:
    """Announcements at a steady rate; network requests, one at a time, spread among them."""

    def __init__(self, events: Events, args, http_port: int, wyoming_port: int):
        self.events, self.args = events, args
        self.http_port, self.wyoming_port = http_port, wyoming_port
        self.network_done = 0
        self.ids: list[str] = []

    def answered(self) -> int:
        return self.events.answered() + self.network_done

    def run(self) -> None:
        network = threading.Thread(target=self._network, daemon=True)
        network.start()
        period = 1.0 / self.args.rate
        start = time.monotonic()
        for n in range(self.args.announcements):
            delay = start + n * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            ann_id = f"soak-{n}"
            self.ids.append(ann_id)
            self.events.say(ann_id, f"Announcement number {n}: the train to platform {n % 9 + 1} leaves now.")
        network.join()
        if not self.events.wait_answered(self.ids, 600):
            raise SystemExit("steady: some announcements got no terminal event within 600 s")

    def _network(self) -> None:
        """HTTP and Wyoming requests interleaved evenly over the announcements' duration."""
        kinds = sorted([(i / self.args.http, "http") for i in range(self.args.http)]
                       + [(i / self.args.wyoming, "wyoming") for i in range(self.args.wyoming)])  # fmt: skip
        duration = self.args.announcements / self.args.rate
        start = time.monotonic()
        for n, (_, kind) in enumerate(kinds):
            delay = start + n * duration / len(kinds) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            (http_request if kind == "http" else wyoming_request)(
                self.http_port if kind == "http" else self.wyoming_port, n
            )
            self.network_done += 1


def flood(events: Events, count: int, timeout: float) -> float:
    """Publish `count` announcements at once; seconds until every one has its terminal event."""
    ids = [f"flood-{n}" for n in range(count)]
    started = time.monotonic()
    for ann_id in ids:
        events.say(ann_id, f"Flood message {ann_id}.")
    if not events.wait_answered(ids, timeout):
        missing = sum(1 for i in ids if i not in events.terminal)
        raise SystemExit(
            f"flood: {missing} of {count} announcements got no terminal event in {timeout:.0f} s"
        )
    return time.monotonic() - started


def report(
    args, sampler: Sampler, steady: Steady, before_flood: ProcessUsage | None, after: ProcessUsage | None
):
    doubled = {i: e for i, e in steady.events.terminal.items() if len(e) != 1}
    warm = [(n, s.rss_kib) for _, n, s in sampler.samples if n >= args.warm_up]
    # the steady phase alone: the samples around a flood (5000 more answered, nearly all refusals) weigh
    # heavily in a fit over every sample
    steady_warm = [(n, s.rss_kib) for _, n, s in sampler.samples[: sampler.steady_count] if n >= args.warm_up]
    summary = {
        "announcements": args.announcements,
        "http": args.http,
        "wyoming": args.wyoming,
        "slope_mb_per_1000": round(slope_per_1000(warm), 3),
        "samples_after_warm_up": len(warm),
        "slope_steady_mb_per_1000": round(slope_per_1000(steady_warm), 3),
        "steady_samples_after_warm_up": len(steady_warm),
        "rss_mib_first": round(sampler.samples[0][2].rss_kib / 1024, 1),
        "rss_mib_last_steady": round((before_flood or sampler.samples[-1][2]).rss_kib / 1024, 1),
        "fds": sorted({s.fds for _, _, s in sampler.samples}),
        "threads": sorted({s.threads for _, _, s in sampler.samples}),
        "children": sorted({s.children for _, _, s in sampler.samples}),
        "ids_with_other_than_one_terminal_event": len(doubled),
    }
    if before_flood is not None and after is not None:
        summary["flood"] = args.flood
        summary["flood_rss_mib_before"] = round(before_flood.rss_kib / 1024, 1)
        summary["flood_rss_mib_after_settle"] = round(after.rss_kib / 1024, 1)
        summary["flood_change_percent"] = round(100 * (after.rss_kib / before_flood.rss_kib - 1), 1)
    print(json.dumps(summary, indent=1))
    if args.json:
        samples = [{"t": t, "answered": n, **vars(s)} for t, n, s in sampler.samples]
        Path(args.json).write_text(json.dumps({"summary": summary, "samples": samples}, indent=1))


def run(args, workdir: Path) -> None:
    if args.bundle is None:
        args.bundle = tiny_bundle(workdir)
    broker, broker_port = start_broker(workdir)
    http_port, wyoming_port = free_port(), free_port()
    daemon = start_daemon(workdir, args, broker_port, http_port, wyoming_port)
    try:
        time.sleep(0.5)
        events = Events(broker_port)
        if not events.online.wait(600):
            raise SystemExit(f"the daemon did not come online; see {workdir / 'daemon.log'}")
        steady = Steady(events, args, http_port, wyoming_port)
        sampler = Sampler(daemon.pid, steady.answered, args.sample_s)
        sampler.take()
        sampler.start()
        steady.run()
        sampler.stopping.set()
        sampler.join()
        sampler.steady_count = len(sampler.samples)
        before = after = None
        if args.flood:
            time.sleep(args.settle_s)
            before = sampler.take()
            print(f"flood of {args.flood}: drained in {flood(events, args.flood, 3600):.0f} s", flush=True)
            sampler.take()
            time.sleep(args.settle_s)
            after = sampler.take()
        report(args, sampler, steady, before, after)
    finally:
        daemon.terminate()
        daemon.wait(60)
        broker.terminate()
        broker.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--announcements", type=int, default=3000)
    parser.add_argument("--http", type=int, default=400)
    parser.add_argument("--wyoming", type=int, default=100)
    parser.add_argument("--rate", type=float, default=4.0, help="announcements per second")
    parser.add_argument("--flood", type=int, default=5000)
    parser.add_argument("--settle-s", type=float, default=60.0, help="wait before and after the flood")
    parser.add_argument("--warm-up", type=int, default=300, help="requests answered before the fit starts")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--max-frames", type=int, default=24)
    parser.add_argument("--small-memories", action="store_true", help="dedup window 30, phrase cache 2 MiB")
    parser.add_argument("--bundle", type=Path, help="default: a tiny random bundle built in the work dir")
    parser.add_argument("--set", help='more settings as JSON by section: \'{"devices": {"num_threads": 1}}\'')
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json", type=Path, help="also write every sample here")
    args = parser.parse_args()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        run(args, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="qwen3tts-soak-") as workdir:
            run(args, Path(workdir))


if __name__ == "__main__":
    main()
