"""The supervisor: restart after a failure (failing the item), give up on a worker that keeps failing,
and never wait forever for a wedged one. Plus the watchdog during a long announcement."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from announcer_rig import Rig, fake_engine, rig_settings, slow_sink

from qwen3tts.appliance.systemd.notify import Heartbeats, Notifier, Watchdog
from qwen3tts.appliance.systemd.supervisor import Supervisor


def wait_until(predicate, timeout=5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.005)


def test_a_failing_worker_fails_its_item_and_runs_again():
    failed_items, runs, fatal = [], [], []

    def worker(stop: threading.Event) -> None:
        runs.append(1)
        if len(runs) < 3:
            raise ValueError(f"bad item {len(runs)}")
        stop.wait()

    supervisor = Supervisor(fatal.append, backoff_s=0.001)
    supervisor.start("w", worker, on_failure=lambda exc: failed_items.append(str(exc)) or "item")
    wait_until(lambda: len(runs) == 3)
    assert failed_items == ["bad item 1", "bad item 2"] and fatal == []
    assert supervisor.stop(timeout=2) == []


def test_a_worker_that_keeps_failing_is_fatal_and_not_restarted_again():
    runs, fatal = [], []

    def worker(stop: threading.Event) -> None:
        runs.append(1)
        raise RuntimeError("always")

    supervisor = Supervisor(fatal.append, max_failures=3, window_s=60, backoff_s=0.001)
    supervisor.start("flaky", worker)
    wait_until(lambda: fatal == ["flaky"])
    time.sleep(0.05)
    assert len(runs) == 3


def test_stop_leaves_a_wedged_worker_behind_instead_of_hanging():
    release = threading.Event()
    supervisor = Supervisor(lambda name: None)
    supervisor.start("wedged", lambda stop: release.wait(30))
    started = time.monotonic()
    assert supervisor.stop(timeout=0.2) == ["wedged"]
    assert time.monotonic() - started < 5
    release.set()


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    path = str(tmp_path / "notify.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.settimeout(0.05)
    monkeypatch.setenv("NOTIFY_SOCKET", path)  # sdnotify reads systemd's variable itself
    yield server
    server.close()


def test_watchdog_pings_keep_coming_during_one_long_announcement(tmp_path, notify_socket, caplog):
    heartbeats = Heartbeats()
    rig = Rig(tmp_path, rig_settings(tmp_path), fake_engine(), sink=slow_sink(0.01),
              heartbeat=heartbeats.beat)  # fmt: skip
    rig.playback.sink = rig.sink
    notifier = Notifier({"NOTIFY_SOCKET": notify_socket.getsockname(), "WATCHDOG_USEC": "500000"})
    watchdog = Watchdog(notifier, heartbeats)
    rig.start()
    watchdog.start()
    pings: list[float] = []
    try:
        rig.say("long", " ".join(f"Part {n} of a long announcement about the store." for n in range(6)))
        deadline = time.monotonic() + 60
        while "finished" not in rig.kinds("long") and time.monotonic() < deadline:
            try:
                if notify_socket.recv(4096) == b"WATCHDOG=1":
                    pings.append(time.monotonic())
            except TimeoutError:
                pass
    finally:
        watchdog.stop()
        rig.close()
    assert rig.kinds("long") == ["started", "first_audio", "finished"]
    written = len(rig.sink.speech("long"))
    assert written / 24000 * 0.25 > 1.0  # it played for well over a second of wall time
    assert pings and pings[-1] - pings[0] > 1.0 and len(pings) >= 4  # a ping every 0.25 s throughout
    assert not [r for r in caplog.records if "watchdog withheld" in r.getMessage()]
