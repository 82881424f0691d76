"""The supervisor restarts a failing worker after failing its item, gives up on one that keeps failing,
and never waits forever for a wedged one; `isolated()` keeps one item's exception to that item.
Synchronised on events the workers set, never on sleeps."""

from __future__ import annotations

import logging
import threading

import pytest
from audio_fakes import FakeClock

from qwen3tts.appliance.systemd.supervisor import Supervisor, isolated


def test_a_failing_worker_fails_its_item_and_runs_again(caplog):
    failed_items, runs, fatal = [], [], []
    third_run = threading.Event()

    def worker(stop: threading.Event) -> None:
        runs.append(1)
        if len(runs) < 3:
            raise ValueError(f"bad item {len(runs)}")
        third_run.set()
        stop.wait()

    supervisor = Supervisor(fatal.append, backoff_s=0.001)
    with caplog.at_level(logging.ERROR, logger="qwen3tts.appliance.systemd.supervisor"):
        supervisor.start(
            "w", worker, on_failure=lambda exc: failed_items.append(str(exc)) or f"item {len(runs)}"
        )
        assert third_run.wait(10)
    assert failed_items == ["bad item 1", "bad item 2"] and fatal == []
    assert [r.getMessage() for r in caplog.records] == [
        "worker w failed on item 1; restarting it",
        "worker w failed on item 2; restarting it",
    ]
    assert all(r.exc_info for r in caplog.records)  # each with its traceback
    assert supervisor.stop(timeout=5) == []


def test_a_worker_that_keeps_failing_is_fatal_and_not_restarted_again():
    runs, fatal, gave_up = [], [], threading.Event()

    def worker(stop: threading.Event) -> None:
        runs.append(1)
        raise RuntimeError("always")

    supervisor = Supervisor(lambda name: (fatal.append(name), gave_up.set()), max_failures=3, window_s=60,
                            backoff_s=0.001)  # fmt: skip
    flaky = supervisor.start("flaky", worker)
    assert gave_up.wait(10)
    flaky.thread.join(10)
    assert not flaky.thread.is_alive()  # its supervising thread ended: no run after the fatal one
    assert fatal == ["flaky"] and len(runs) == 3


def test_failures_older_than_the_window_do_not_count():
    clock, runs, fatal = FakeClock(), [], []
    done = threading.Event()

    def worker(stop: threading.Event) -> None:
        runs.append(1)
        clock.advance(40)  # each failure 40 s after the last: never 3 within 60 s
        if len(runs) == 6:
            done.set()
            stop.wait()
            return
        raise RuntimeError("now and then")

    supervisor = Supervisor(fatal.append, max_failures=3, window_s=60, backoff_s=0.001, clock=clock)
    supervisor.start("sometimes", worker)
    assert done.wait(10)
    assert fatal == [] and len(runs) == 6
    supervisor.stop(timeout=5)


def test_an_item_failure_that_cannot_be_reported_still_restarts_the_worker(caplog):
    runs, second = [], threading.Event()

    def worker(stop: threading.Event) -> None:
        runs.append(1)
        if len(runs) == 1:
            raise ValueError("bad item")
        second.set()
        stop.wait()

    def on_failure(exc):
        raise OSError("read-only state directory")

    supervisor = Supervisor(lambda name: None, backoff_s=0.001)
    with caplog.at_level(logging.ERROR, logger="qwen3tts.appliance.systemd.supervisor"):
        supervisor.start("w", worker, on_failure=on_failure)
        assert second.wait(10)
    assert "worker w could not fail the item it was handling" in caplog.text
    supervisor.stop(timeout=5)


def test_stop_leaves_a_wedged_worker_behind_instead_of_hanging():
    release = threading.Event()
    supervisor = Supervisor(lambda name: None)
    supervisor.start("wedged", lambda stop: release.wait(30))
    supervisor.start("polite", lambda stop: stop.wait())
    assert supervisor.stop(timeout=0.2) == ["wedged"]
    release.set()


def test_isolated_fails_the_item_logs_it_once_with_its_traceback_and_goes_on(caplog):
    failed = []
    with caplog.at_level(logging.ERROR, logger="qwen3tts.appliance.systemd.supervisor"):
        with isolated("a1: moving its audio", failed.append):
            raise KeyError("chunk")
        went_on = True
    assert went_on and [type(e) for e in failed] == [KeyError]
    [record] = caplog.records
    assert record.getMessage() == "a1: moving its audio failed: KeyError: 'chunk'" and record.exc_info


def test_isolated_swallows_a_failure_report_that_fails_too(caplog):
    def report(exc):
        raise OSError("cannot write the event")

    with (
        caplog.at_level(logging.ERROR, logger="qwen3tts.appliance.systemd.supervisor"),
        isolated("a1: expiring", report),
    ):
        raise ValueError("bad")
    assert [r.getMessage() for r in caplog.records] == [
        "a1: expiring failed: ValueError: bad",
        "a1: expiring: the failure could not be reported",
    ]


def test_isolated_does_nothing_when_nothing_fails_and_lets_interrupts_through():
    failed = []
    with isolated("fine", failed.append):
        pass
    assert failed == []
    with pytest.raises(KeyboardInterrupt), isolated("ctrl-c", failed.append):
        raise KeyboardInterrupt
    assert failed == []
