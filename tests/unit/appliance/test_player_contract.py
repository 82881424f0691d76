"""How the service drives the queue: pop -> engine -> done/discard -> events (with a fake engine)."""

from __future__ import annotations

import json

from qwen3tts.appliance.events import Event
from qwen3tts.appliance.intake import (
    AnnouncementIntake,
    AnnouncementPolicy,
    announcement_events,
)
from qwen3tts.appliance.messages import Inbound, Stop, Topics
from qwen3tts.appliance.queue import AnnouncementQueue


class FakeEngine:
    """Records submit/cancel like engine.Engine; 'plays' instantly."""

    def __init__(self) -> None:
        self.submitted: list[str] = []
        self.cancelled: list[str] = []

    def submit(self, ann) -> str:
        self.submitted.append(ann.text)
        return ann.id

    def cancel(self, request_id: str) -> None:
        self.cancelled.append(request_id)


def test_a_repeated_announcement_plays_twice_then_finishes_and_leaves_the_spool(tmp_path):
    queue, engine, events = AnnouncementQueue(tmp_path), FakeEngine(), []
    intake = AnnouncementIntake(
        queue, AnnouncementPolicy(), Topics("q/s"), ack=lambda t: None, clock=lambda: 10.0
    )
    intake.handle(
        Inbound("q/s/say", b'{"text": "mind the gap", "id": "g", "repeat": 2, "repeat_interval": 1}')
    )
    now = 10.0
    while (ann := queue.pop_next(now)) is not None or len(queue):
        if ann is None:
            now += 0.5
            continue
        ann.t_started = now
        engine.submit(ann)
        events += [m.event for m in announcement_events(ann, "started", now=now)]
        ann.t_finished = now
        if not queue.done(ann, now):
            events += [m.event for m in announcement_events(ann, "finished", now=now)]
    assert engine.submitted == ["mind the gap", "mind the gap"]
    assert events == ["started", "started", "finished"]
    assert list(tmp_path.glob("*.json")) == []


def test_stop_current_cancels_in_the_engine_and_discards_the_spool_entry(tmp_path):
    queue, engine = AnnouncementQueue(tmp_path), FakeEngine()
    intake = AnnouncementIntake(queue, AnnouncementPolicy(), Topics("q/s"), ack=lambda t: None)
    intake.handle(Inbound("q/s/say", b'{"text": "long", "id": "L"}'))
    playing = queue.pop_next()
    engine.submit(playing)
    (command,) = intake.handle(Inbound("q/s/stop", b"current")).commands
    assert command == Stop("current")
    engine.cancel(playing.id)
    queue.discard(playing)
    (event,) = announcement_events(playing, "cancelled", "stop")
    assert isinstance(event, Event) and json.loads(event.payload())["event"] == "cancelled"
    assert engine.cancelled == ["L"] and list(tmp_path.glob("*.json")) == []
