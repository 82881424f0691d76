"""sd_notify datagrams through a fake NOTIFY_SOCKET: READY, RELOADING (with MONOTONIC_USEC), STATUS,
EXTEND_TIMEOUT_USEC, WATCHDOG and STOPPING; nothing at all off systemd."""

from __future__ import annotations

import os
import time

import pytest
from notify_socket import notify_socket as bound_notify_socket

from qwen3tts.appliance.systemd.notify import ExtendStartTimeout, Notifier


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    with bound_notify_socket(tmp_path) as server:
        monkeypatch.setenv("NOTIFY_SOCKET", server.getsockname())  # sdnotify reads systemd's variable itself
        yield server


def received(server) -> str:
    return server.recv(4096).decode()


def notifier() -> Notifier:
    return Notifier({"NOTIFY_SOCKET": os.environ["NOTIFY_SOCKET"]})


def test_ready_status_extend_watchdog_and_stopping_reach_the_socket(notify_socket):
    n = notifier()
    assert n.enabled
    n.extend_timeout(90)
    assert received(notify_socket) == "EXTEND_TIMEOUT_USEC=90000000"
    n.ready("ready; queue=0")
    assert received(notify_socket) == "READY=1\nSTATUS=ready; queue=0"
    n.status("speaking a1")
    assert received(notify_socket) == "STATUS=speaking a1"
    n.watchdog()
    assert received(notify_socket) == "WATCHDOG=1"
    n.stopping()
    assert received(notify_socket) == "STOPPING=1\nSTATUS=stopping"


def test_reloading_sends_reloading_with_the_monotonic_time_it_began(notify_socket):
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    notifier().reloading("reloading: lexicon changed")
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    reloading, monotonic, status = received(notify_socket).split("\n")
    assert reloading == "RELOADING=1" and status == "STATUS=reloading: lexicon changed"
    key, usec = monotonic.split("=")
    assert key == "MONOTONIC_USEC" and before <= int(usec) <= after  # what systemd compares with its own
    notifier().reloading()
    assert received(notify_socket).endswith("\nSTATUS=reloading the configuration")


def test_without_notify_socket_nothing_is_sent_and_nothing_fails():
    off = Notifier({})
    assert not off.enabled
    off.ready("x")
    off.reloading()
    off.status("x")
    off.extend_timeout(1)
    off.watchdog()
    off.stopping()


@pytest.mark.parametrize(
    ("environ", "interval"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_the_watchdog_interval_is_read_from_watchdog_usec_for_this_pid_only(environ, interval):
    assert Notifier(environ).watchdog_interval == interval


def test_a_long_start_asks_for_more_time_at_once_and_again_until_it_is_done(notify_socket):
    with ExtendStartTimeout(notifier(), every_s=0.01, extend_s=30):
        assert received(notify_socket) == "EXTEND_TIMEOUT_USEC=30000000"  # on entering
        assert received(notify_socket) == "EXTEND_TIMEOUT_USEC=30000000"  # and again while it runs
