"""The embedded default: everything the daemon needs on one machine, for a first run and the demo.

A local mosquitto on loopback (started here if nothing listens yet) and a tiny bundle (written and
built if missing). Never touches anything but loopback, and only stops the broker it started.
"""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from qwen3tts.errors import BundleError, ConfigError
from qwen3tts.paths import default_bundle
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def broker_listening(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class LocalBroker:
    """A mosquitto child process on 127.0.0.1, stopped by pid when the daemon stops."""

    def __init__(self, port: int, state_dir: Path):
        self.port = port
        self.state_dir = state_dir
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin")
        if binary is None:
            raise ConfigError(
                "mqtt: no broker listens and mosquitto is not installed (apt-get install mosquitto)"
            )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        conf = self.state_dir / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        with open(self.state_dir / "mosquitto.log", "ab") as log_file:  # the child keeps its own copy
            command = [binary, "-c", str(conf)]
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file)
        deadline = time.monotonic() + 5
        while not broker_listening("127.0.0.1", self.port, 0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise ConfigError(
                    f"mqtt: could not start mosquitto on 127.0.0.1:{self.port} "
                    f"(see {self.state_dir / 'mosquitto.log'})"
                )
            time.sleep(0.05)
        log.info("started mosquitto on 127.0.0.1:%d (pid %d)", self.port, self.process.pid)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()


def ensure_broker(
    settings: Settings, state_dir: Path, on_created: Callable[[LocalBroker], None] | None = None
) -> LocalBroker | None:
    """Start a loopback mosquitto when the configured broker is local and not running.

    `on_created` gets the broker before its process starts, so a stop during start-up can end it.
    """
    mqtt = settings.mqtt
    if broker_listening(mqtt.host, mqtt.port):
        return None
    if mqtt.host not in LOOPBACK:
        log.warning("broker %s:%d is not reachable yet; the client keeps retrying", mqtt.host, mqtt.port)
        return None
    broker = LocalBroker(mqtt.port, state_dir)
    if on_created is not None:
        on_created(broker)
    broker.start()
    return broker


def ensure_tiny_bundle(settings: Settings) -> None:
    """Write and build the random tiny bundle at its default path, if it is not there yet.

    Only ever at `paths.default_bundle()`: a configured bundle that is missing is an error (see
    `commands.run`), never silently replaced by random weights.
    """
    bundle = settings.model.bundle
    if (bundle / "manifest.json").exists():
        return
    if bundle != default_bundle():
        raise BundleError(f"model.bundle: {bundle} is not the embedded default {default_bundle()}")
    import nncf  # noqa: F401 - imported here so its stdout handler can be routed into the log

    from qwen3tts.logs import quiet_libraries
    from qwen3tts.model.build import build_bundle
    from qwen3tts.model.tiny import write_checkpoint

    quiet_libraries()

    checkpoint = bundle.parent / "tiny-checkpoint"
    if not (checkpoint / "config.json").exists():
        log.info("writing a tiny random checkpoint to %s (no real weights on this machine)", checkpoint)
        write_checkpoint(checkpoint, variant="custom_voice", shape="tiny")
    log.info("building the bundle %s from %s", bundle, checkpoint)
    chunks = (settings.engine.first_chunk_frames, settings.engine.chunk_frames)
    build_bundle(checkpoint, bundle, weights=settings.model.weights, codec_chunks=chunks, report=log.info)
