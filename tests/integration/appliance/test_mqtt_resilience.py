"""Nothing accepted is lost and nothing twice: reconnects, broker restarts, SIGKILL, SIGTERM, protocol
fallback, stale input. The runner (mqtt_intake_runner.py) runs the real intake and announcer workers;
nothing is synthesised there, so whatever was accepted stays spooled and tests can read the spool."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from mqtt_intake_runner import IntakeRunner, spooled

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

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
        runner.settle(publisher)
        assert queued_ids(publisher, base) == ["new"]
        assert [a.id for a in runner.accepted()] == ["new"] and runner.client.protocol == protocol
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
    time.sleep(2.2)  # the broker's clock must pass the expiry: mosquitto counts whole seconds (1 s up to 2 s)
    runner = IntakeRunner(mosquitto.host, mosquitto.port, "offline", tmp_path / "s").start()
    try:
        runner.settle(publisher)
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
        assert [a.id for a in runner.wait_accepted(3)] == ["before", "during", "after"]
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
        assert [a.id for a in runner.wait_accepted(2)] == ["before", "after"]
    finally:
        runner.stop()


class RunnerProcess:
    """mqtt_intake_runner.py as a subprocess that the test can SIGKILL; its log goes to `log_path`."""

    def __init__(self, broker, site: str, spool: Path, log_path: Path, **env: str) -> None:
        args = [sys.executable, str(RUNNER_SCRIPT), broker.host, str(broker.port), site, str(spool)]
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                                         env={**os.environ, **env})  # fmt: skip
        lines = self._read_lines(2, timeout=30)
        assert lines[0].startswith("REPLAYED ") and lines[1] == "READY", lines
        self.replayed: list[str] = json.loads(lines[0].removeprefix("REPLAYED "))

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

    def terminate(self) -> int:
        """SIGTERM: the runner stops as the service does; its exit code."""
        self.proc.terminate()
        return self.proc.wait(15)

    def log(self) -> str:
        return self.log_path.read_text()


DROPPED_REDELIVERY = "dropped, the broker's redelivery of a message already spooled"


def wait_offline(watcher, base: str, count: int) -> None:
    """Until the broker said `offline` for us `count` times (the last will, on an abrupt exit)."""
    topic = f"{base}/availability"
    watcher.wait_for(lambda ms: sum(m.topic == topic and m.payload == b"offline" for m in ms) >= count)


def test_sigkill_trials_lose_nothing_and_accept_nothing_twice(durable_mosquitto, recorder_factory, tmp_path):
    """Two SIGKILLs while 30 says are in flight: every one is spooled exactly once at the end, queued at
    most once, in arrival order; what expired while the appliance was down is reported, not replayed."""
    broker, spool, base = durable_mosquitto, tmp_path / "spool", "qwen3tts/killed"
    watcher = recorder_factory(broker, [f"{base}/event", f"{base}/availability"])
    process = RunnerProcess(broker, "killed", spool, tmp_path / "run-0.log")
    assert process.replayed == []
    watcher.publish(f"{base}/say", '{"text": "short lived", "id": "short", "ttl": 1}')
    ids = [f"a{i:02d}" for i in range(30)]
    for ident in ids:  # fire without waiting, so the kill lands while some are still in flight
        watcher.client.publish(f"{base}/say", json.dumps({"text": ident, "id": ident}), qos=1)
    replayed: set[str] = set()
    for trial, kill_after in enumerate((10, 20), start=1):
        watcher.wait_for(lambda _, n=kill_after, r=replayed: len(set(queued_ids(watcher, base)) | r) >= n, 10)
        process.kill()
        wait_offline(watcher, base, trial)  # the last will: the broker announces us offline
        if trial == 1:
            time.sleep(1.1)  # let the ttl=1 announcement (the one playing) expire while the appliance is down
        accepted_before_kill = set(queued_ids(watcher, base)) | replayed
        process = RunnerProcess(broker, "killed", spool, tmp_path / f"run-{trial}.log")
        assert accepted_before_kill - {"short"} <= set(process.replayed)  # every accepted one comes back
        assert "short" not in process.replayed
        assert process.replayed == sorted(process.replayed)  # FIFO order survives the crash
        replayed.update(process.replayed)
    try:
        # What was in flight when a process died arrives again from the broker's MQTT session.
        watcher.wait_for(lambda ms: replayed | set(queued_ids(watcher, base)) >= set(ids), timeout=10)
        settle = json.dumps({"scope": "id", "id": "settle"})
        watcher.publish(f"{base}/stop", settle)
        watcher.wait_for(lambda ms: any(b'"settle"' in m.payload for m in ms))
    finally:
        assert process.terminate() == 0
    queued = Counter(queued_ids(watcher, base))
    assert max(queued.values()) == 1  # nothing accepted twice, whatever the process that saw it
    expired = [json.loads(m.payload) for m in watcher.on(f"{base}/event") if b'"expired"' in m.payload]
    assert [(e["id"], e["reason"]) for e in expired] == [("short", "expired while the appliance was down")]
    kept = spooled(spool)  # nothing finishes here: everything accepted is still spooled, once
    assert [a["id"] for a in kept] == ids
    packets = [a["message_id"] for a in kept]
    assert all(isinstance(p, int) for p in packets) and len(set(packets)) == len(ids)


def test_a_redelivery_in_the_spool_window_is_dropped_but_identical_messages_without_id_are_not(
    durable_mosquitto, recorder_factory, tmp_path
):
    """Issue 27 item 7: five identical says without an id, published in a burst, are five announcements,
    also when the process dies after spooling the first and the broker delivers all five again."""
    broker, spool, base = durable_mosquitto, tmp_path / "spool", "qwen3tts/burst"
    watcher = recorder_factory(broker, [f"{base}/event"])
    first = RunnerProcess(broker, "burst", spool, tmp_path / "first.log", QWEN3TTS_TEST_KILL_AFTER_SPOOL="1")
    for _ in range(5):
        watcher.client.publish(f"{base}/say", "No id here.", qos=1)
    assert first.proc.wait(10) == -9  # died right after the first spool write, before its ack
    assert len(spooled(spool)) == 1
    second = RunnerProcess(broker, "burst", spool, tmp_path / "second.log")
    try:
        assert len(second.replayed) == 1
        watcher.wait_for(lambda ms: len(queued_ids(watcher, base)) >= 4)
        watcher.publish(f"{base}/stop", '{"scope": "id", "id": "settle"}')
        watcher.wait_for(lambda ms: any(b'"settle"' in m.payload for m in ms))
    finally:
        assert second.terminate() == 0
    kept = spooled(spool)
    assert [a["text"] for a in kept] == ["No id here."] * 5
    assert len({a["id"] for a in kept}) == 5 and len({a["message_id"] for a in kept}) == 5
    assert set(queued_ids(watcher, base)) == {a["id"] for a in kept} - set(second.replayed)
    log = second.log()
    assert "inbound DUP packet" in log  # the broker delivered them again, flagged as redeliveries
    assert log.count(DROPPED_REDELIVERY) == 1  # only the spooled one: same content and packet id


def test_a_burst_of_identical_messages_cut_by_sigterm_is_five_announcements_after_the_restart(
    durable_mosquitto, recorder_factory, tmp_path
):
    """The issue 27 item 7 attack: five identical says just before SIGTERM; after the restart all five
    are there (what the stopping process did not spool, it did not acknowledge either)."""
    broker, spool, base = durable_mosquitto, tmp_path / "spool", "qwen3tts/term"
    watcher = recorder_factory(broker, [f"{base}/event"])
    first = RunnerProcess(broker, "term", spool, tmp_path / "first.log")
    for _ in range(5):
        watcher.client.publish(f"{base}/say", "No id here.", qos=1)
    assert first.terminate() == 0
    second = RunnerProcess(broker, "term", spool, tmp_path / "second.log")
    try:
        watcher.wait_for(lambda ms: len(set(queued_ids(watcher, base))) >= 5)
        watcher.publish(f"{base}/stop", '{"scope": "id", "id": "settle"}')
        watcher.wait_for(lambda ms: any(b'"settle"' in m.payload for m in ms))
    finally:
        assert second.terminate() == 0
    queued = Counter(queued_ids(watcher, base))
    kept = spooled(spool)
    assert [a["text"] for a in kept] == ["No id here."] * 5 and set(queued) == {a["id"] for a in kept}
    assert max(queued.values()) == 1 and len(set(second.replayed)) == len(second.replayed)


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
        assert runner.wait_accepted(1)[0].text == "spoken over 3.1.1"
    finally:
        runner.stop()
        proxy.close()
