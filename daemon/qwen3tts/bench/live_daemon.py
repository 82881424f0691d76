"""One daemon on loopback with its own mosquitto, as the measuring scripts start it from outside
(scripts/soak.py, scripts/hostile_matrix.py, scripts/measure_native_heap.py): everything in one work
directory, nothing downloaded (the tiny random bundle is built there)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from qwen3tts.bench.ports import free_port


def start_broker(workdir: Path) -> tuple[subprocess.Popen, int]:
    """mosquitto on a free loopback port; it queues up to 100,000 messages for the daemon's session (a
    stock mosquitto drops all but 1000: docs/operations.md, "What the broker may drop")."""
    port = free_port()
    config = workdir / "mosquitto.conf"
    config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                      "max_queued_messages 100000\nmax_inflight_messages 20\n")  # fmt: skip
    log = (workdir / "mosquitto.log").open("ab")
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"  # Debian's is in sbin
    broker = subprocess.Popen([binary, "-c", str(config)], stdout=log, stderr=log)
    return broker, port


def daemon_config(
    workdir: Path, bundle: Path, site: str, ports: tuple[int, int, int], max_frames: int
) -> dict:
    """The configuration of one daemon on loopback (`ports`: the broker's, HTTP's, Wyoming's): WAV sink,
    HTTP and Wyoming on, everything in `workdir` (shared with scripts/hostile_matrix.py, which adds to it)."""
    broker_port, http_port, wyoming_port = ports
    return {
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": "127.0.0.1", "port": broker_port, "site": site, "discovery": False},
        "announcements": {"spool_dir": str(workdir / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(workdir / "wav"), "lead_in_ms": 0, "tail_ms": 0},
        "thermal": {"enabled": False},
        "cache": {"phrase_dir": str(workdir / "phrases")},
        "engine": {"max_frames": max_frames},
        "servers": {"http": {"enabled": True, "port": http_port},
                    "wyoming": {"enabled": True, "port": wyoming_port}},
    }  # fmt: skip


def launch_daemon(workdir: Path, config: dict, preexec_fn=None) -> subprocess.Popen:
    """`qwen3tts run` on `config`, its state and cache in `workdir`, its output appended to daemon.log."""
    path = workdir / "qwen3tts.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    env = {**os.environ, "XDG_STATE_HOME": str(workdir / "state"), "XDG_CACHE_HOME": str(workdir / "cache")}
    with (workdir / "daemon.log").open("ab") as log:
        command = [sys.executable, "-m", "qwen3tts", "--config", str(path), "run"]
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=preexec_fn)


def tiny_bundle(workdir: Path) -> Path:
    """The tiny random CustomVoice bundle, built in `workdir` (nothing is downloaded)."""
    from qwen3tts.model.build import build_bundle
    from qwen3tts.model.tiny import write_checkpoint

    checkpoint = write_checkpoint(workdir / "ckpt", variant="custom_voice", shape="tiny")
    build_bundle(checkpoint, workdir / "bundle", weights="f32", report=lambda line: None)
    return workdir / "bundle"
