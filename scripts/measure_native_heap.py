"""Whose native memory grows with the requests a daemon answers: one `qwen3tts run` under a heap profiler.

Starts a mosquitto and one daemon on the tiny random bundle with the settings of the suite's short soak
(tests/integration/service/test_long_running.py: WAV sink, HTTP and Wyoming on, `engine.max_frames` 8,
a 30-id duplicate window and a 2 MiB phrase cache, so the bounded memories are full after the warm-up),
its command line prefixed by `--wrap` (a profiler), then sends rounds of 3 MQTT announcements, 1 HTTP and
1 Wyoming request, each once the one before it was answered. After every round it writes the time (ms
since the epoch) and the daemon's RSS to `<workdir>/marks.json`, so a profile's snapshots can be read at
"after the warm-up" and "at the end". The daemon gets SIGTERM at the end (memray finishes its file on a
clean exit).

    PYTHONPATH=daemon:var/memray .venv/bin/python scripts/measure_native_heap.py --workdir var/heap-long \\
        --rounds 400 --wrap "python -m memray run --native --no-compress -q -f -o {workdir}/daemon.bin"
    PYTHONPATH=daemon:var/memray .venv/bin/python scripts/measure_native_heap_report.py var/heap-long \\
        --from 600

`python` in `--wrap` is this interpreter; `{workdir}` is the work directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from qwen3tts.bench.process_usage import usage
from soak import Events, free_port, http_request, start_broker, wyoming_request


def config(workdir: Path, bundle: Path, broker_port: int, http_port: int, wyoming_port: int) -> Path:
    path = workdir / "qwen3tts.yaml"
    path.write_text(json.dumps({
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": "127.0.0.1", "port": broker_port, "site": "soak", "discovery": False},
        "announcements": {"spool_dir": str(workdir / "spool"), "dedup_window": 30},
        "audio": {"sink": "wav", "wav_dir": str(workdir / "wav"), "lead_in_ms": 0, "tail_ms": 0},
        "thermal": {"enabled": False},
        "cache": {"phrase_dir": str(workdir / "phrases"), "max_bytes": 2 * 2**20},
        "engine": {"max_frames": 8},
        "servers": {"http": {"enabled": True, "port": http_port},
                    "wyoming": {"enabled": True, "port": wyoming_port}},
    }))  # fmt: skip
    return path


def tiny_bundle(workdir: Path) -> Path:
    bundle = workdir / "bundle"
    if not bundle.exists():
        from qwen3tts.model.build import build_bundle
        from qwen3tts.model.tiny import write_checkpoint

        checkpoint = write_checkpoint(workdir / "ckpt", variant="custom_voice", shape="tiny")
        build_bundle(checkpoint, bundle, weights="f32", report=lambda line: None)
    return bundle


def connect(broker_port: int) -> Events:
    for _ in range(100):  # the broker takes a moment to listen
        try:
            return Events(broker_port)
        except ConnectionRefusedError:
            time.sleep(0.1)
    return Events(broker_port)


def one_round(events: Events, http_port: int, wyoming_port: int, n: int) -> None:
    """As the suite's short soak: three announcements waited for one by one, one HTTP, one Wyoming."""
    for k in range(3):
        ann_id = f"a{5 * n + k}"
        events.say(ann_id, f"Train {ann_id} is due.")
        if not events.wait_answered([ann_id], 120):
            raise SystemExit(f"{ann_id} got no terminal event in 120 s")
    http_request(http_port, 5 * n + 3)
    wyoming_request(wyoming_port, 5 * n + 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=120, help="rounds of 5 requests after start")
    parser.add_argument("--wrap", default="", help="command line before `-m qwen3tts ...`")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the daemon")
    parser.add_argument("--bundle", type=Path, help="default: a tiny random bundle built in the work dir")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    bundle = args.bundle.resolve() if args.bundle else tiny_bundle(workdir)
    broker, broker_port = start_broker(workdir)
    http_port, wyoming_port = free_port(), free_port()
    path = config(workdir, bundle, broker_port, http_port, wyoming_port)
    wrap = shlex.split(args.wrap.format(workdir=workdir)) or ["python"]
    wrap = [sys.executable if word == "python" else word for word in wrap]
    env = {**os.environ, "XDG_STATE_HOME": str(workdir / "state"), "XDG_CACHE_HOME": str(workdir / "cache"),
           **dict(pair.split("=", 1) for pair in args.env)}  # fmt: skip
    with (workdir / "daemon.log").open("ab") as log:
        daemon = subprocess.Popen([*wrap, "-m", "qwen3tts", "--config", str(path), "run"],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)  # fmt: skip
    marks = []
    try:
        events = connect(broker_port)
        if not events.online.wait(900):
            raise SystemExit(f"the daemon did not come online; see {workdir / 'daemon.log'}")
        for n in range(args.rounds):
            one_round(events, http_port, wyoming_port, n)
            marks.append({"requests": 5 * (n + 1), "ms": int(time.time() * 1000),
                          "rss_kib": usage(daemon.pid).rss_kib})  # fmt: skip
            if n % 10 == 9 or n == args.rounds - 1:
                print(f"{5 * (n + 1)} requests, RSS {marks[-1]['rss_kib'] / 1024:.1f} MiB", flush=True)
            (workdir / "marks.json").write_text(json.dumps(marks))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(600)
        broker.terminate()
        broker.wait(10)


if __name__ == "__main__":
    main()
