"""The real hand-offs between the announcer's, the audio and the engine's threads (the rest of the
announcer is tested by driving `turn()`: tests/unit/appliance/announcements/).

The real Engine runs over the fake runner (greedy: each piece's PCM is what it gives alone), the
announcer and the audio thread under the real Supervisor. Tests wait on events, never on time: the
event log wakes waiters, and a gated sink holds the audio thread inside a write at a known position
while the test acts from its own thread.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from announcer_rig import GatedSink, Rig, fake_engine, rig_settings, slow_sink
from notify_socket import notify_socket as bound_notify_socket

from qwen3tts.appliance.systemd.notify import Notifier
from qwen3tts.appliance.systemd.watchdog import Heartbeats, Watchdog

FOUR = "Store notice, part one. Store notice, part two. Store notice, part three. Store notice, part four."
BLOCK = 960


@pytest.fixture
def rigs(tmp_path):
    made: list[Rig] = []

    def make(sink=None, heartbeat=None, **announcements) -> Rig:
        rig = Rig(tmp_path, rig_settings(tmp_path, **announcements), fake_engine(), heartbeat=heartbeat)
        if sink is not None:
            rig.sink = rig.playback.sink = sink
        made.append(rig.start())
        return rig

    yield make
    for rig in made:
        rig.close()


class Submitted:
    """Records the engine handles the announcer gets; `wait_for(prefix)` blocks until one is submitted."""

    def __init__(self, engine):
        self.handles, self._cond, self._submit = [], threading.Condition(), engine.submit
        engine.submit = self.submit

    def submit(self, request):
        handle = self._submit(request)
        with self._cond:
            self.handles.append(handle)
            self._cond.notify_all()
        return handle

    def of(self, ann_id: str) -> list:
        with self._cond:
            return [h for h in self.handles if h.request_id.startswith(f"{ann_id}#")]

    def wait_for(self, ann_id: str, timeout: float = 30) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.of(ann_id), timeout), f"nothing of {ann_id} was submitted"


def test_one_announcement_goes_through_the_engine_announcer_and_audio_threads(tmp_path, rigs):
    rig = rigs()
    rig.say("a", FOUR)
    rig.wait_for("a", "finished")
    assert rig.kinds("a") == ["queued", "started", "first_audio", "finished"]
    np.testing.assert_array_equal(rig.sink.speech("a"), np.concatenate(rig.sentence_pcm(FOUR)))
    assert list((tmp_path / "spool").glob("*.json")) == [] and rig.fatal == []


def test_a_barge_in_from_another_thread_cuts_the_audio_thread_at_its_next_block_and_resumes(rigs):
    gate = GatedSink(item="normal@0")
    rig = rigs(sink=gate)
    sentences = rig.sentence_pcm(FOUR)
    gate.after = len(sentences[0]) + 2 * BLOCK  # hold the audio thread inside piece 1
    submitted = Submitted(rig.engine)
    rig.say("normal", FOUR)
    assert gate.reached.wait(30)
    rig.say("alarm", "Fire alarm. Leave the building now.", priority="emergency")
    submitted.wait_for("alarm")  # submitted in the turn that cut `normal`: the cut is in the track
    gate.release.set()
    rig.wait_for("normal", "finished")
    assert rig.sink.order() == ["normal@0", "alarm@0", "normal@1"]
    assert rig.events("normal")[3] == (
        "queued",
        "an emergency announcement barged in; resumes from sentence 2",
    )
    cut = rig.sink.speech("normal", 0)
    assert len(cut) == gate.after  # the block being written when the cut came was the last one
    np.testing.assert_array_equal(cut, np.concatenate(sentences)[: len(cut)])
    np.testing.assert_array_equal(rig.sink.speech("normal", 1), np.concatenate(sentences[1:]))
    assert rig.kinds("alarm") == ["queued", "started", "first_audio", "finished"]
    assert all(h.wait(10) for h in submitted.of("normal"))  # nothing of it is left in the engine


def test_a_stop_from_another_thread_is_answered_on_the_announcer_s_and_the_next_one_plays(rigs):
    gate = GatedSink(item="long@0", after=3 * BLOCK)
    rig = rigs(sink=gate)
    submitted = Submitted(rig.engine)
    rig.say("long", FOUR)
    rig.say("next", "The next one.")
    assert gate.reached.wait(30)
    answered, answers = threading.Event(), []

    def answer(event, **fields):
        answers.append((event, fields, threading.current_thread().name))
        answered.set()

    rig.announcer.stop("current", None, answer)
    assert answered.wait(30)
    assert answers == [("stopped", {"scope": "current", "cancelled": ()}, "announcer")]
    gate.release.set()
    rig.wait_for("next", "finished")
    assert rig.events("long")[-1] == ("cancelled", "stopped") and len(rig.sink.speech("long")) == 3 * BLOCK
    assert all(h.wait(10) for h in submitted.of("long"))
    assert rig.sink.order() == ["long@0", "next@0"]


def test_drain_returns_once_the_current_one_finished_and_its_last_event_is_out(tmp_path, rigs):
    gate = GatedSink(item="current@0", after=3 * BLOCK)
    rig = rigs(sink=gate, lookahead_s=0.0)
    rig.say("current", FOUR)
    rig.say("waiting", "Still waiting.")
    assert gate.reached.wait(30)
    gate.release.set()
    assert rig.announcer.drain(finish=True, timeout=60)
    assert rig.kinds("current") == ["queued", "started", "first_audio", "finished"]  # already, no wait
    assert rig.kinds("waiting") == ["queued"] and "waiting@0" not in rig.sink.order()
    np.testing.assert_array_equal(rig.sink.speech("current"), np.concatenate(rig.sentence_pcm(FOUR)))


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    with bound_notify_socket(tmp_path, timeout=0.05) as server:
        monkeypatch.setenv("NOTIFY_SOCKET", server.getsockname())  # sdnotify reads systemd's variable itself
        yield server


def test_watchdog_pings_keep_coming_during_one_long_announcement(rigs, notify_socket, caplog):
    """The workers' heartbeats are progress: a long play on a paced sound card keeps the pings coming."""
    heartbeats = Heartbeats()
    rig = rigs(sink=slow_sink(0.01), heartbeat=heartbeats.beat)  # 40 ms blocks in 10 ms
    notifier = Notifier({"NOTIFY_SOCKET": notify_socket.getsockname(), "WATCHDOG_USEC": "500000"})
    watchdog = Watchdog(notifier, heartbeats)
    watchdog.start()
    pings: list[float] = []
    try:
        rig.say("long", " ".join(f"Part {n} of a long announcement about the store." for n in range(6)))
        while "finished" not in rig.kinds("long"):
            try:
                if notify_socket.recv(4096) == b"WATCHDOG=1":
                    pings.append(time.monotonic())
            except TimeoutError:
                assert not rig.fatal
    finally:
        watchdog.stop()
    assert rig.kinds("long") == ["queued", "started", "first_audio", "finished"]
    assert len(rig.sink.speech("long")) / 24000 * 0.25 > 1.0  # it played for well over a second
    assert len(pings) >= 4 and pings[-1] - pings[0] > 1.0  # a ping every 0.25 s throughout
    assert not [r for r in caplog.records if "watchdog withheld" in r.getMessage()]
