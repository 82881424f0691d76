"""Nothing accepted is lost: reconnects, broker restarts, SIGKILL, protocol fallback, stale input."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mqtt_intake_runner import IntakeRunner

RUNNER_SCRIPT = Path(__file__).with_name("mqtt_intake_runner.py")


def queued_ids(recorder, base: str) -> list[str]:
    return [json.loads(m.payload)["id"] for m in recorder.on(f"{base}/event") if b'"queued"' in m.payload]


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_retained_say_is_ignored_but_later_says_are_served(mosquitto, recorder_factory, tmp_path, protocol):
    base = f"qwen3tts/retained{protocol.replace('.', '')}"
    publisher = recorder_factory(mosquitto, [f"{base}/event"])
    publisher.publish(f"{base}/say", '{"text": "the doorbell rang", "id": "old"}', retain=True)
    runner = IntakeRunner(
        mosquitto.host, mosquitto.port, base.split("/")[1], tmp_path / "s", protocol=protocol
    )
    runner.start()
    try:
        publisher.publish(f"{base}/say", '{"text": "fresh", "id": "new"}')
        publisher.wait_for(lambda ms: len(ms) >= 1)
        time.sleep(0.2)
        assert queued_ids(publisher, base) == ["new"]
        assert runner.queue.ids() == ["new"] and runner.client.protocol == protocol
    finally:
        runner.stop()


def test_mqtt5_message_expiry_drops_requests_that_went_stale_while_offline(
    mosquitto, recorder_factory, tmp_path
):
    runner = IntakeRunner(mosquitto.host, mosquitto.port, "offline", tmp_path / "s").start()
    runner.stop()  # the broker keeps the MQTT session (session expiry) and queues QoS 1 says for it
    publisher = recorder_factory(mosquitto, ["qwen3tts/offline/event"])
    publisher.publish("qwen3tts/offline/say", '{"text": "stale", "id": "stale"}', MessageExpiryInterval=1)
    publisher.publish("qwen3tts/offline/say", '{"text": "kept", "id": "kept"}', MessageExpiryInterval=60)
    time.sleep(2.2)  # mosquitto counts expiry in whole seconds: 1 s can mean up to 2 s
    runner = IntakeRunner(mosquitto.host, mosquitto.port, "offline", tmp_path / "s").start()
    try:
        publisher.wait_for(lambda ms: len(ms) >= 1)
        time.sleep(0.2)
        assert queued_ids(publisher, "qwen3tts/offline") == ["kept"]
    finally:
        runner.stop()


def test_broker_restart_reconnects_resubscribes_and_loses_nothing(
    durable_mosquitto, recorder_factory, tmp_path
):
    broker = durable_mosquitto
    runner = IntakeRunner(broker.host, broker.port, "restart", tmp_path / "s").start()
    try:
        before = recorder_factory(broker, [])
        before.publish("qwen3tts/restart/say", '{"text": "before", "id": "before"}')
        broker.restart()
        # Published while the appliance is still reconnecting: the broker queues it in the
        # appliance's persisted MQTT session.
        during = recorder_factory(broker, ["qwen3tts/restart/availability"])
        during.publish("qwen3tts/restart/say", '{"text": "during", "id": "during"}')
        during.wait_for(lambda ms: any(m.payload == b"online" for m in ms), timeout=10)
        assert runner.client.wait_connected(5)
        during.publish("qwen3tts/restart/say", '{"text": "after", "id": "after"}')
        deadline = time.monotonic() + 5
        while len(runner.queue) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runner.queue.ids() == ["before", "during", "after"]
    finally:
        runner.stop()


def test_broker_that_forgot_everything_gets_the_subscriptions_again(mosquitto, recorder_factory, tmp_path):
    runner = IntakeRunner(mosquitto.host, mosquitto.port, "amnesia", tmp_path / "s").start()
    try:
        watcher = recorder_factory(mosquitto, [])
        watcher.publish("qwen3tts/amnesia/say", '{"text": "before", "id": "before"}')
        mosquitto.restart()  # persistence off: the MQTT session and its subscriptions are gone
        watcher = recorder_factory(mosquitto, ["qwen3tts/amnesia/availability"])
        watcher.wait_for(lambda ms: any(m.payload == b"online" for m in ms), timeout=10)
        assert runner.client.wait_connected(5)
        watcher.publish("qwen3tts/amnesia/say", '{"text": "after", "id": "after"}')
        deadline = time.monotonic() + 5
        while len(runner.queue) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runner.queue.ids() == ["before", "after"]
    finally:
        runner.stop()


class RunnerProcess:
    """mqtt_intake_runner.py as a subprocess that the test can SIGKILL."""

    def __init__(self, broker, site: str, spool: Path) -> None:
        args = [sys.executable, str(RUNNER_SCRIPT), broker.host, str(broker.port), site, str(spool)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.replayed: list[str] = []
        lines = self._read_lines(2, timeout=20)
        assert lines[0].startswith("REPLAYED ") and lines[1] == "READY", lines
        self.replayed = json.loads(lines[0].removeprefix("REPLAYED "))

    def _read_lines(self, count: int, timeout: float) -> list[str]:
        lines: list[str] = []
        reader = threading.Thread(
            target=lambda: [lines.append(self.proc.stdout.readline().strip()) for _ in range(count)]
        )
        reader.start()
        reader.join(timeout)
        if len(lines) < count:
            self.kill()
            pytest.fail(f"runner subprocess did not start: {lines}")
        return lines

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)


def test_killed_process_replays_every_unexpired_accepted_announcement(
    durable_mosquitto, recorder_factory, tmp_path
):
    broker, spool, base = durable_mosquitto, tmp_path / "spool", "qwen3tts/killed"
    watcher = recorder_factory(broker, [f"{base}/event", f"{base}/availability"])
    first = RunnerProcess(broker, "killed", spool)
    assert first.replayed == []
    watcher.publish(f"{base}/say", '{"text": "short lived", "id": "short", "ttl": 1}')
    ids = [f"a{i:02d}" for i in range(30)]
    for ident in ids:  # fire without waiting, so the kill lands while some are still in flight
        watcher.client.publish(f"{base}/say", json.dumps({"text": ident, "id": ident}), qos=1)
    watcher.wait_for(lambda ms: len(queued_ids(watcher, base)) >= 10)
    first.kill()

    # The last will: the broker announces us offline on the abrupt exit.
    watcher.wait_for(lambda ms: ms[-1].topic.endswith("availability") and ms[-1].payload == b"offline")
    time.sleep(1.1)  # let the ttl=1 announcement expire while the appliance is down
    accepted_before_kill = set(queued_ids(watcher, base))
    events_before_restart = len(watcher.on(f"{base}/event"))

    second = RunnerProcess(broker, "killed", spool)
    try:
        replayed = set(second.replayed)
        assert accepted_before_kill - {"short"} <= replayed  # every acknowledged one comes back
        assert "short" not in replayed
        assert second.replayed == sorted(second.replayed)  # FIFO order survives the crash

        def queued_after_restart() -> list[str]:
            later = watcher.on(f"{base}/event")[events_before_restart:]
            return [json.loads(m.payload)["id"] for m in later if b'"queued"' in m.payload]

        # What was in flight when the process died arrives again from the broker's MQTT session.
        watcher.wait_for(lambda ms: replayed | set(queued_after_restart()) >= set(ids), timeout=10)
        time.sleep(0.2)  # room for a wrong duplicate
        redelivered = queued_after_restart()
        assert len(redelivered) == len(set(redelivered)) and not replayed & set(redelivered)
        expired = [json.loads(m.payload) for m in watcher.on(f"{base}/event") if b'"expired"' in m.payload]
        assert [e["id"] for e in expired] == ["short"]
    finally:
        second.kill()


class RefuseMqtt5Proxy:
    """Stands in for an MQTT 3.1.1-only broker: refuses v5 CONNECTs, relays everything else."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.refused = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        first = conn.recv(4096)
        # CONNECT: fixed header, remaining length (1 byte here), 0x00 0x04 "MQTT", protocol level.
        if len(first) > 8 and first[0] == 0x10 and first[8] == 5:
            self.refused += 1
            conn.sendall(b"\x20\x02\x00\x01")  # CONNACK: unacceptable protocol version (3.1.1 style)
            conn.close()
            return
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        upstream.sendall(first)
        threading.Thread(target=self._pipe, args=(upstream, conn), daemon=True).start()
        self._pipe(conn, upstream)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                s.close()

    def close(self) -> None:
        self.server.close()


def test_falls_back_to_mqtt_311_when_the_broker_refuses_mqtt5(mosquitto, recorder_factory, tmp_path):
    proxy = RefuseMqtt5Proxy(mosquitto.port)
    runner = IntakeRunner("127.0.0.1", proxy.port, "legacy", tmp_path / "s", protocol="5")
    try:
        runner.start(timeout=10)
        assert proxy.refused == 1 and runner.client.protocol == "3.1.1"
        watcher = recorder_factory(mosquitto, ["qwen3tts/legacy/event"])
        watcher.publish("qwen3tts/legacy/say", "spoken over 3.1.1")
        watcher.wait_for(lambda ms: len(ms) >= 1)
        assert runner.queue.pop_next().text == "spoken over 3.1.1"
    finally:
        runner.stop()
        proxy.close()
