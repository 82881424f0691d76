"""A real mosquitto on 127.0.0.1 for MQTT tests, and a capturing MQTT 5 test client.

`Mosquitto` writes a temp config, starts /usr/sbin/mosquitto on a free loopback port, polls the
port, and stops by pid; `restart()` keeps the port. It fails the test loudly when mosquitto is not
installed: CI must not pass without it. The fixtures using it live in conftest.py next to this file.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from qwen3tts.bench.ports import free_port


def mosquitto_binary() -> str:
    for candidate in ("/usr/sbin/mosquitto", shutil.which("mosquitto")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail(
        "mosquitto is not installed (apt-get install mosquitto); the MQTT tests need it", pytrace=False
    )


def wait_for_port(port: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.01)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


class Mosquitto:
    """One mosquitto process on loopback that a test can stop and start again on the same port."""

    def __init__(self, workdir: Path, *, persistence: bool, extra_config: tuple[str, ...] = ()) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.workdir = workdir
        self.config = workdir / "mosquitto.conf"
        lines = [
            f"listener {self.port} 127.0.0.1",
            "allow_anonymous true",
            f"persistence {str(persistence).lower()}",
            # Started as root, mosquitto drops to user "mosquitto", who cannot write in our temp dir.
            f"user {pwd.getpwuid(os.geteuid()).pw_name}",
            *extra_config,
        ]
        if persistence:
            lines.append(f"persistence_location {workdir}/")
        self.config.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = (self.workdir / "mosquitto.log").open("ab")
        self.process = subprocess.Popen([mosquitto_binary(), "-c", str(self.config)], stdout=log, stderr=log)
        try:
            wait_for_port(self.port)
        except TimeoutError:
            self.stop()
            pytest.fail(f"mosquitto did not start: {(self.workdir / 'mosquitto.log').read_text()}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()  # SIGTERM: mosquitto saves its persistence file on the way out
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass(frozen=True)
class Captured:
    topic: str
    payload: bytes
    retain: bool
    properties: Properties | None


class Recorder:
    """A test-side MQTT 5 client: publishes, and records everything on the topics it watches."""

    def __init__(self, broker: Mosquitto, topics: list[str]) -> None:
        self.messages: list[Captured] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        unix = getattr(broker, "socket_path", None)  # a broker the test reaches by its Unix socket
        transport = "unix" if unix else "tcp"
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5, transport=transport)
        self.client.on_message = self._on_message
        self.client.on_connect = lambda c, u, f, rc, p: (
            c.subscribe([(t, 1) for t in topics]) if topics else self._subscribed.set()
        )
        self.client.on_subscribe = lambda *args: self._subscribed.set()
        self.client.connect(unix or broker.host, broker.port)
        self.client.loop_start()
        if not self._subscribed.wait(5):
            raise TimeoutError("recorder could not subscribe")

    def _on_message(self, client, userdata, msg) -> None:
        with self._cond:
            self.messages.append(Captured(msg.topic, bytes(msg.payload), bool(msg.retain), msg.properties))
            self._cond.notify_all()

    def publish(
        self, topic: str, payload: bytes | str, *, retain: bool = False, qos: int = 1, **props: object
    ) -> None:
        properties = None
        if props:
            properties = Properties(PacketTypes.PUBLISH)
            for name, value in props.items():
                setattr(properties, name, value)
        info = self.client.publish(topic, payload, qos=qos, retain=retain, properties=properties)
        info.wait_for_publish(5)

    def wait_for(self, predicate: Callable[[list[Captured]], bool], timeout: float = 5.0) -> list[Captured]:
        """Wait until predicate(messages so far) holds; fails the test with what arrived if not."""
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self.messages), timeout):
                seen = [(m.topic, m.payload[:120]) for m in self.messages]
                pytest.fail(f"timed out after {timeout} s; messages so far: {seen}")
            return list(self.messages)

    def on(self, topic: str) -> list[Captured]:
        with self._cond:
            return [m for m in self.messages if m.topic == topic]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
