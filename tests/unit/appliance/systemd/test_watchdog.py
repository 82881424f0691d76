"""The watchdog ping is earned: WATCHDOG=1 goes out only while every registered worker has beaten within
one interval; a silent worker is named in the log once, and the pings resume when it beats again."""

from __future__ import annotations

import logging

import pytest
from audio_fakes import FakeClock
from notify_socket import notify_socket as bound_notify_socket

from qwen3tts.appliance.systemd.notify import Notifier
from qwen3tts.appliance.systemd.watchdog import Heartbeats, Watchdog


@pytest.fixture
def notify_socket(tmp_path):
    with bound_notify_socket(tmp_path) as server:
        yield server


def notifier(server, watchdog_usec: str = "10000000") -> Notifier:
    return Notifier({"NOTIFY_SOCKET": server.getsockname(), "WATCHDOG_USEC": watchdog_usec})


def pending(server) -> list[str]:
    """Datagrams already waiting on the socket."""
    out = []
    server.setblocking(False)
    try:
        while True:
            out.append(server.recv(4096).decode())
    except BlockingIOError:
        return out
    finally:
        server.settimeout(10)


def test_pings_go_out_only_while_every_worker_beats_and_the_silent_one_is_named_once(
    notify_socket, monkeypatch, caplog
):
    monkeypatch.setenv("NOTIFY_SOCKET", notify_socket.getsockname())
    clock = FakeClock()
    beats = Heartbeats(clock)
    for worker in ("mqtt", "engine", "audio"):
        beats.register(worker)
    watchdog = Watchdog(notifier(notify_socket), beats)
    assert watchdog.check_once() and pending(notify_socket) == ["WATCHDOG=1"]
    clock.advance(11)  # only mqtt and audio beat: the engine thread hangs
    beats.beat("mqtt")
    beats.beat("audio")
    with caplog.at_level(logging.ERROR, logger="qwen3tts.appliance.systemd.watchdog"):
        assert not watchdog.check_once()
        assert not watchdog.check_once()
    assert pending(notify_socket) == []
    assert [r.getMessage() for r in caplog.records] == ["watchdog withheld: no heartbeat from engine"]
    beats.beat("engine")  # it recovers: pings resume
    assert watchdog.check_once() and pending(notify_socket) == ["WATCHDOG=1"]


def test_stale_lists_exactly_the_silent_workers_in_order():
    clock = FakeClock()
    beats = Heartbeats(clock)
    beats.register("b")
    beats.register("a")
    clock.advance(5)
    beats.register("c")
    assert beats.stale(max_age=3) == ["a", "b"] and beats.stale(max_age=5) == []


def test_the_watchdog_thread_pings_at_half_the_interval_and_stops(notify_socket, monkeypatch):
    monkeypatch.setenv("NOTIFY_SOCKET", notify_socket.getsockname())
    beats = Heartbeats()  # the real clock: the thread's pings come from it
    beats.register("announcer")
    watchdog = Watchdog(notifier(notify_socket, watchdog_usec="2000000"), beats)  # a ping every second
    watchdog.start()
    try:
        beats.beat("announcer")
        assert notify_socket.recv(4096) == b"WATCHDOG=1"
    finally:
        watchdog.stop()
    assert not watchdog._thread.is_alive()


def test_without_watchdog_usec_no_thread_is_started():
    watchdog = Watchdog(Notifier({}), Heartbeats())
    watchdog.start()
    watchdog.stop()
    assert watchdog._thread is None
