"""The durable priority queue: exact order, exact spool contents, crash replay, quarantine."""

from __future__ import annotations

import json
import logging
import time

import pytest

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.queue import AnnouncementQueue, Spool, quarantined
from qwen3tts.errors import RequestError


def ann(ident: str, priority: str = "normal", **kw) -> Announcement:
    return Announcement(id=ident, text=f"text of {ident}", priority=priority, **kw)


def spooled_ids(queue: AnnouncementQueue) -> list[str]:
    return [
        json.loads(p.read_text())["announcement"]["id"] for p in sorted(queue.spool.directory.glob("*.json"))
    ]


def test_emergency_beats_priority_beats_normal_and_each_level_is_fifo(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    for ident, level in [
        ("n1", "normal"),
        ("p1", "priority"),
        ("n2", "normal"),
        ("e1", "emergency"),
        ("p2", "priority"),
    ]:
        queue.put(ann(ident, level))
    assert queue.ids() == ["e1", "p1", "p2", "n1", "n2"]
    assert [queue.pop_next(now=0).id for _ in range(5)] == ["e1", "p1", "p2", "n1", "n2"]
    assert queue.pop_next(now=0) is None


def test_put_spools_before_returning_and_pop_keeps_the_entry_until_done(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("a"))
    queue.put(ann("b"))
    assert spooled_ids(queue) == ["a", "b"]
    playing = queue.pop_next(now=0)
    assert playing.id == "a" and spooled_ids(queue) == ["a", "b"]  # a crash now replays "a"
    assert queue.done(playing, now=1) is False
    assert spooled_ids(queue) == ["b"] and len(queue) == 1


def test_full_queue_rejects_without_spooling(tmp_path):
    queue = AnnouncementQueue(tmp_path, max_queue=2)
    queue.put(ann("a"))
    queue.put(ann("b"))
    with pytest.raises(RequestError, match="queue full"):
        queue.put(ann("c"))
    assert spooled_ids(queue) == ["a", "b"]


def test_repeat_requeues_after_the_interval_and_then_leaves_the_spool(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("r", repeat=2, repeat_interval=5.0))
    first = queue.pop_next(now=100)
    assert queue.done(first, now=101) is True  # one play left
    assert queue.pop_next(now=105) is None  # not before 106
    assert spooled_ids(queue) == ["r"]
    second = queue.pop_next(now=106)
    assert second.id == "r" and second.plays_done == 1
    assert queue.done(second, now=107) is False
    assert spooled_ids(queue) == [] and len(queue) == 0


def test_expire_removes_only_announcements_past_their_deadline(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("old", expires_at=10.0))
    queue.put(ann("new", expires_at=100.0))
    queue.put(ann("forever"))
    assert queue.pop_next(now=50).id == "new"  # the expired one is never handed out
    assert [a.id for a in queue.expire(now=50)] == ["old"]
    assert spooled_ids(queue) == ["new", "forever"]


def test_remove_and_clear_cancel_waiting_entries_and_their_files(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    for ident in ("a", "b", "c"):
        queue.put(ann(ident))
    assert queue.remove("b").id == "b" and queue.remove("b") is None
    assert [a.id for a in queue.clear()] == ["a", "c"]
    assert spooled_ids(queue) == [] and len(queue) == 0


def test_replay_restores_order_drops_expired_and_continues_the_sequence(tmp_path):
    before = AnnouncementQueue(tmp_path)
    before.put(ann("n1"))
    before.put(ann("stale", expires_at=50.0))
    before.put(ann("e1", "emergency"))
    in_progress = before.pop_next(now=0)  # "e1" was playing when the process died
    assert in_progress.id == "e1"

    after = AnnouncementQueue(tmp_path)
    replayed, expired = after.replay(now=60)
    assert [a.id for a in replayed] == ["n1", "e1"] and [a.id for a in expired] == ["stale"]
    assert after.ids() == ["e1", "n1"]
    after.put(ann("n2"))
    assert after.ids() == ["e1", "n1", "n2"]
    assert spooled_ids(after) == ["n1", "e1", "n2"]


def test_corrupt_spool_entries_are_quarantined_with_a_log_line(tmp_path, caplog):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("good"))
    (tmp_path / "000000000007.json").write_text("{ not json")
    (tmp_path / "000000000008.json").write_text(json.dumps({"version": 1, "announcement": {"id": 3}}))
    (tmp_path / "000000000009.json.tmp").write_text("half written")

    with caplog.at_level(logging.WARNING, logger="qwen3tts.appliance.announcements.queue"):
        replayed, _ = AnnouncementQueue(tmp_path).replay(now=0)
    assert [a.id for a in replayed] == ["good"]
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "quarantine").iterdir()) == [
        "000000000007",
        "000000000008",
    ]
    assert sum("is corrupt" in r.getMessage() for r in caplog.records) == 2
    assert not list(tmp_path.glob("*.tmp"))  # never acknowledged, so the broker still has it


def test_announcement_survives_the_spool_round_trip_with_binary_correlation_data(tmp_path):
    original = ann("x", "priority", correlation_data=b"\x00\xff", response_topic="r", expires_at=9.5, seq=4)
    spool = Spool(tmp_path)
    spool.write(original)
    assert spool.load() == [original]


def test_ordered_lists_only_announcements_that_may_play_now_in_play_order(tmp_path):
    changes = []
    queue = AnnouncementQueue(tmp_path, on_change=lambda: changes.append(1))
    queue.put(ann("later", not_before=time.time() + 60))
    queue.put(ann("gone", expires_at=time.time() - 1))
    queue.put(ann("n"))
    queue.put(ann("e", "emergency"))
    assert [a.id for a in queue.ordered()] == ["e", "n"] and len(changes) == 4


def test_a_spooled_announcement_the_process_died_on_twice_is_quarantined_and_never_replayed(tmp_path):
    first = AnnouncementQueue(tmp_path, max_attempts=2)
    first.put(ann("poison"))
    first.put(ann("fine"))
    for _life in range(2):  # each life pops it and dies while it plays (nothing ends it in order)
        life = AnnouncementQueue(tmp_path, max_attempts=2)
        life.replay()
        assert life.pop_next().id == "poison"
    survivor = AnnouncementQueue(tmp_path, max_attempts=2)
    replayed, expired = survivor.replay()
    assert [a.id for a in replayed] == ["fine"] and expired == []
    assert [a.id for a in survivor.quarantined] == ["poison"]
    [path] = quarantined(tmp_path)
    assert json.loads(path.read_text())["announcement"]["id"] == "poison"
    assert spooled_ids(survivor) == ["fine"]
    assert [a.id for a in AnnouncementQueue(tmp_path).replay()[0]] == ["fine"]  # never again


def test_an_orderly_interruption_does_not_count_as_a_failed_attempt(tmp_path):
    for _life in range(3):
        life = AnnouncementQueue(tmp_path, max_attempts=2)
        life.replay()
        if _life == 0:
            life.put(ann("resumed"))
        popped = life.pop_next()
        life.requeue(popped)  # barge-in with resume: spooled again with attempts 0
    assert [a.id for a in AnnouncementQueue(tmp_path).replay()[0]] == ["resumed"]
    assert quarantined(tmp_path) == []
