"""Pool throughput with 1, 2 and 3 members (issue 23 item 3): N real daemons (`qwen3tts run`) on one
tiny bundle, WAV sinks not paced, one mosquitto on loopback; COUNT pooled announcements published at
once, timed from the first publish to the last `finished`. docs/benchmarks.md quotes it.

    python scripts/measure_pool_throughput.py [--count N] [--repeat R] [--members 1,2,3] [--bundle B]

All members share this machine's CPUs, so the figure is the pool's overhead and sharing, not the speed-up
of boxes that each have their own CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import paho.mqtt.client as paho

from qwen3tts.bench.ports import free_port
from qwen3tts.model.build import build_bundle
from qwen3tts.model.tiny import write_checkpoint

POOL = "qwen3tts/pool"


def start_broker(root: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    conf = root / "mosquitto.conf"
    user = pwd.getpwuid(os.geteuid()).pw_name
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nuser {user}\n")
    broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(conf)],
                              stderr=subprocess.DEVNULL)  # fmt: skip
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return broker, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("mosquitto did not start")


def start_daemon(root: Path, site: str, bundle: Path, port: int) -> subprocess.Popen:
    home = root / site
    home.mkdir()
    config = home / "qwen3tts.yaml"
    config.write_text(json.dumps({
        "model": {"bundle": str(bundle)},
        "mqtt": {"port": port, "site": site, "discovery": False, "pool": "g"},
        "announcements": {"spool_dir": str(home / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(home / "wav"), "lead_in_ms": 0, "tail_ms": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
        "engine": {"max_frames": 24, "temperature": 0},
    }))  # fmt: skip
    env = {**os.environ, "XDG_STATE_HOME": str(home), "XDG_CACHE_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "qwen3tts", "--config", str(config), "run"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # fmt: skip


class Watcher:
    """Counts `finished` events and the members in the round robin."""

    def __init__(self, port: int) -> None:
        self.finished: dict[str, float] = {}
        self.members: set[str] = set()
        self.cond = threading.Condition()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_message = self.on_message
        self.client.connect("127.0.0.1", port)
        self.client.subscribe([("qwen3tts/+/event", 1), (f"{POOL}/members/#", 1)])
        self.client.loop_start()

    def on_message(self, client, userdata, msg) -> None:
        with self.cond:
            if msg.topic.endswith("/event"):
                event = json.loads(msg.payload)
                if event.get("event") == "finished":
                    self.finished.setdefault(event["id"], time.monotonic())
            elif msg.payload and json.loads(msg.payload).get("state") == "member":
                self.members.add(msg.topic.rsplit("/", 1)[-1])
            self.cond.notify_all()

    def wait(self, predicate, timeout: float, what: str) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")


def one_run(root: Path, bundle: Path, members: int, count: int, tag: str) -> float:
    broker, port = start_broker(root)
    daemons = [start_daemon(root, f"m{n}-{tag}", bundle, port) for n in range(members)]
    try:
        watcher = Watcher(port)
        watcher.wait(lambda: len(watcher.members) >= members, 300, f"{members} member(s) to join the pool")
        time.sleep(2)  # the daemons' warm-up ends; nothing else runs
        t0 = time.monotonic()
        for n in range(count):
            watcher.client.publish(
                f"{POOL}/say", json.dumps({"id": f"b{n}", "text": f"Pooled notice {n}."}), 1
            )
        watcher.wait(lambda: len(watcher.finished) >= count, 600, f"{count} announcements to finish")
        return max(watcher.finished.values()) - t0
    finally:
        for d in daemons:
            d.kill()
            d.wait()
        broker.terminate()
        broker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bundle", type=Path, help="a tiny bundle to use (default: write and build one)")
    parser.add_argument("--members", default="1,2,3", help="pool sizes to measure, comma-separated")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pool-bench-"))
    try:
        bundle = args.bundle or root / "bundle"
        if args.bundle is None:
            write_checkpoint(root / "ckpt", variant="custom_voice", shape="tiny", seed=0)
            build_bundle(root / "ckpt", bundle, weights="f32", report=lambda line: None)
        print(
            f"{os.cpu_count()} CPUs, {args.count} pooled announcements, tiny bundle, median of {args.repeat}"
        )
        for members in (int(m) for m in args.members.split(",")):
            times = []
            for r in range(args.repeat):
                run_root = root / f"run-{members}-{r}"
                run_root.mkdir()
                times.append(one_run(run_root, bundle, members, args.count, f"{members}{r}"))
            wall = statistics.median(times)
            print(f"{members} member(s): {wall:.1f} s, {args.count / wall:.2f} announcements/s "
                  f"(runs: {', '.join(f'{t:.1f}' for t in times)})")  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
