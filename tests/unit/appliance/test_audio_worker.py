"""The audio thread: serial playback, barge-in, cancel and flush (real threads, a recording sink)."""

from __future__ import annotations

import threading
import time

import numpy as np
from audio_fakes import FakeSink

from qwen3tts.appliance.audio_worker import AudioWorker
from qwen3tts.appliance.chimes import ChimeSet
from qwen3tts.appliance.playback import Playback, PlaybackEvent, Utterance
from qwen3tts.settings import AudioSettings

SETTINGS = AudioSettings(lead_in_ms=20, tail_ms=20, fade_ms=10, block_ms=10, jitter_buffer_ms=0)


def endless(value: float):
    while True:
        yield np.full(480, value, dtype=np.float32)
        time.sleep(0.002)


def short(value: float, n: int = 2400):
    yield np.full(n, value, dtype=np.float32)


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.002)


class Harness:
    def __init__(self):
        self.events: list[PlaybackEvent] = []
        self.lock = threading.Lock()
        self.sink = FakeSink(paced=True, real_delay_s=0.001)
        playback = Playback(self.sink, SETTINGS, ChimeSet.silent(), self.record, clock=self.sink.clock)
        self.worker = AudioWorker(playback, idle_tick_s=0.01)
        self.worker.start()

    def record(self, event: PlaybackEvent) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self, item_id: str) -> list[str]:
        with self.lock:
            return [e.kind for e in self.events if e.id == item_id]

    def final(self, item_id: str) -> PlaybackEvent:
        wait_for(lambda: set(self.kinds(item_id)) & {"finished", "cancelled", "error"})
        with self.lock:
            ends = ("finished", "cancelled", "error")
            return next(e for e in self.events if e.id == item_id and e.kind in ends)


def test_announcements_play_one_after_another_never_mixed():
    h = Harness()
    for name, value in (("a", 0.1), ("b", 0.2), ("c", 0.3)):
        h.worker.submit(Utterance(name, short(value)))
    for name in "abc":
        assert h.final(name).kind == "finished"
    order = [w.item_id for w in h.sink.writes]
    assert order == sorted(order)  # all of a, then all of b, then all of c
    h.worker.stop()


def test_barge_in_interrupts_the_playing_one_within_a_block_and_plays_first():
    h = Harness()
    cancelled = []
    h.worker.submit(Utterance("long", endless(0.1), cancel_source=lambda: cancelled.append("long")))
    h.worker.submit(Utterance("queued", short(0.2)))
    wait_for(lambda: "first_audio" in h.kinds("long"))
    writes_before = len(h.sink.writes)
    h.worker.submit(Utterance("alarm", short(0.9), priority="emergency"), barge_in=True)
    assert h.final("long").reason == "barge-in" and cancelled == ["long"]
    assert h.final("alarm").kind == "finished" and h.final("queued").kind == "finished"
    long_after = [w for w in h.sink.writes[writes_before:] if w.item_id == "long"]
    assert len(long_after) <= 2  # at most the block being written when it came, then the fade
    assert long_after[-1].samples[-1] == 0.0
    order = [w.item_id for w in h.sink.writes if w.item_id != "long"]
    assert order.index("alarm") < order.index("queued")
    h.worker.stop()


def test_flush_cancels_the_playing_and_every_queued_announcement_at_once():
    h = Harness()
    sources_cancelled = []
    for name in ("p", "q1", "q2"):
        cancel = lambda n=name: sources_cancelled.append(n)  # noqa: E731
        h.worker.submit(Utterance(name, endless(0.1), cancel_source=cancel))
    wait_for(lambda: "first_audio" in h.kinds("p"))
    assert h.worker.flush("stop all") == ["p", "q1", "q2"]
    for name in ("p", "q1", "q2"):
        assert (h.final(name).kind, h.final(name).reason) == ("cancelled", "stop all")
    assert sorted(sources_cancelled) == ["p", "q1", "q2"]
    assert {w.item_id for w in h.sink.writes} == {"p"}  # the queued ones never made a sound
    h.worker.stop()


def test_cancel_by_id_removes_a_queued_one_or_interrupts_the_playing_one():
    h = Harness()
    h.worker.submit(Utterance("p", endless(0.1)))
    h.worker.submit(Utterance("q", short(0.2)))
    wait_for(lambda: "first_audio" in h.kinds("p"))
    assert h.worker.cancel("q") and h.kinds("q") == ["cancelled"]
    assert not h.worker.cancel("nobody")
    assert h.worker.cancel("p", reason="stop") and h.final("p").reason == "stop"
    h.worker.stop()


def test_stop_finishes_the_current_one_and_hands_back_the_queued_ones():
    h = Harness()
    h.worker.submit(Utterance("now", short(0.1, 24000)))
    h.worker.submit(Utterance("later", short(0.2)))
    wait_for(lambda: "started" in h.kinds("now"))
    left = h.worker.stop(finish_current=True)
    assert [u.id for u in left] == ["later"] and h.final("now").kind == "finished"
    assert h.kinds("later") == []
