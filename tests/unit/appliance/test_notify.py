"""sd_notify datagrams through a fake NOTIFY_SOCKET, and a watchdog that must be earned."""

import os
import socket

import pytest

from qwen3tts.appliance.systemd.notify import Heartbeats, Notifier, Watchdog


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    """A bound AF_UNIX datagram socket standing in for systemd's notify socket."""
    path = str(tmp_path / "notify.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.settimeout(2)
    monkeypatch.setenv("NOTIFY_SOCKET", path)  # sdnotify reads systemd's variable itself
    yield server
    server.close()


def received(server):
    return server.recv(4096).decode()


def test_ready_status_extend_and_stopping_reach_the_socket(notify_socket):
    notifier = Notifier({"NOTIFY_SOCKET": os.environ["NOTIFY_SOCKET"]})
    notifier.extend_timeout(90)
    assert received(notify_socket) == "EXTEND_TIMEOUT_USEC=90000000"
    notifier.ready("ready; queue=0")
    assert received(notify_socket) == "READY=1\nSTATUS=ready; queue=0"
    notifier.status("speaking a1")
    assert received(notify_socket) == "STATUS=speaking a1"
    notifier.stopping()
    assert received(notify_socket) == "STOPPING=1\nSTATUS=stopping"


def test_without_notify_socket_nothing_is_sent_and_nothing_fails():
    notifier = Notifier({})
    assert not notifier.enabled
    notifier.ready("x")
    notifier.watchdog()


def test_the_watchdog_interval_is_read_from_watchdog_usec_for_this_pid_only():
    assert Notifier({"WATCHDOG_USEC": "30000000"}).watchdog_interval == 30.0
    assert Notifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({}).watchdog_interval is None


def test_watchdog_pings_only_while_every_worker_beats(notify_socket):
    clock = FakeClock()
    beats = Heartbeats(clock)
    for worker in ("mqtt", "engine", "audio"):
        beats.register(worker)
    env = {"NOTIFY_SOCKET": os.environ["NOTIFY_SOCKET"], "WATCHDOG_USEC": "10000000"}
    watchdog = Watchdog(Notifier(env), beats)
    assert watchdog.check_once()
    assert received(notify_socket) == "WATCHDOG=1"
    # 11 s later only mqtt and audio have beaten: the engine thread hangs -> no ping
    clock.now += 11
    beats.beat("mqtt")
    beats.beat("audio")
    assert not watchdog.check_once()
    notify_socket.settimeout(0.2)
    with pytest.raises(TimeoutError):
        received(notify_socket)
    # the engine recovers -> pings resume
    beats.beat("engine")
    assert watchdog.check_once()
    assert received(notify_socket) == "WATCHDOG=1"


def test_stale_lists_exactly_the_silent_workers():
    clock = FakeClock()
    beats = Heartbeats(clock)
    beats.register("a")
    clock.now += 5
    beats.register("b")
    assert beats.stale(max_age=3) == ["a"]
