"""The durable priority queue, one owner, no lock: exact order, exact spool contents after every change,
duplicates, repeats, crash replay and the poison quarantine."""

from __future__ import annotations

import json

import pytest

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.queue import Accepted, AnnouncementQueue
from qwen3tts.appliance.announcements.spool import quarantined
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import RequestError


def ann(ident: str, priority: Priority = Priority.NORMAL, **kw) -> Announcement:
    return Announcement(id=ident, text=f"text of {ident}", priority=priority, **kw)


def spooled(queue: AnnouncementQueue) -> list[tuple[str, int]]:
    """(id, attempts) of every spool file, in spool order."""
    docs = [json.loads(p.read_text())["announcement"] for p in sorted(queue.spool.directory.glob("*.json"))]
    return [(doc["id"], doc["attempts"]) for doc in docs]


def test_emergency_beats_priority_beats_normal_and_each_level_is_first_come_first_served(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    levels = [("n1", Priority.NORMAL), ("p1", Priority.PRIORITY), ("n2", Priority.NORMAL),
              ("e1", Priority.EMERGENCY), ("p2", Priority.PRIORITY)]  # fmt: skip
    for ident, level in levels:
        assert queue.put(ann(ident, level)) is Accepted.QUEUED
    assert queue.ids() == ["e1", "p1", "p2", "n1", "n2"]
    assert [a.id for a in queue.waiting()] == [a.id for a in queue.ordered(now=0)] == queue.ids()
    assert [a.seq for a in sorted(queue.waiting(), key=lambda a: a.seq)] == [1, 2, 3, 4, 5]


def test_put_spools_before_it_returns_and_pop_keeps_the_entry_counting_the_attempt(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("a"))
    queue.put(ann("b"))
    assert spooled(queue) == [("a", 0), ("b", 0)]
    a = queue.pop(queue.find("a"))
    assert queue.ids() == ["b"] and spooled(queue) == [("a", 1), ("b", 0)]  # a crash now replays "a"
    assert a.attempts == 1 and queue.find("a") is None
    assert queue.done(a, now=1) is None
    assert spooled(queue) == [("b", 0)] and len(queue) == 1


def test_a_full_queue_refuses_with_a_request_error_and_spools_nothing(tmp_path):
    queue = AnnouncementQueue(tmp_path, max_queue=2)
    queue.put(ann("a"))
    queue.put(ann("b"))
    with pytest.raises(RequestError, match=r"queue full \(2 announcements waiting\)"):
        queue.put(ann("c"))
    assert spooled(queue) == [("a", 0), ("b", 0)]
    queue.pop(queue.find("a"))  # the current one does not count
    assert queue.put(ann("c")) is Accepted.QUEUED


def test_a_known_id_is_a_duplicate_and_only_a_redelivered_packet_of_a_known_message_a_redelivery(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    assert queue.put(ann("a", message_id=5)) is Accepted.QUEUED
    assert queue.put(ann("a")) is Accepted.DUPLICATE
    same_message = Announcement(id="other", text="text of a", message_id=5)
    assert queue.put(same_message, redelivered=True) is Accepted.REDELIVERY
    assert queue.put(Announcement(id="new", text="text of a", message_id=5)) is Accepted.QUEUED  # no DUP
    other_packet = Announcement(id="pkt", text="text of a", message_id=6)
    assert queue.put(other_packet, redelivered=True) is Accepted.QUEUED
    assert [i for i, _ in spooled(queue)] == ["a", "new", "pkt"]
    assert AnnouncementQueue(tmp_path).put(ann("a")) is Accepted.DUPLICATE  # remembered across restarts


def test_a_repeat_waits_its_interval_then_leaves_the_spool(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("r", repeat=2, repeat_interval=5.0))
    first = queue.pop(queue.find("r"))
    resumed = queue.requeue(first, cursor=2)  # interrupted in its third sentence
    first = queue.pop(resumed)
    again = queue.done(first, now=101)  # one play left
    assert (again.not_before, again.cursor, again.attempts, again.plays_done) == (106.0, 0, 0, 1)
    assert queue.ordered(now=105) == [] and queue.ids() == ["r"]  # waiting, not yet due
    assert queue.ordered(now=106) == [again] and spooled(queue) == [("r", 0)]
    assert queue.done(queue.pop(again), now=107) is None
    assert spooled(queue) == [] and len(queue) == 0


def test_a_repeat_whose_next_play_would_come_after_its_expiry_ends_now(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("r", repeat=3, repeat_interval=10.0, expires_at=105.0))
    r = queue.pop(queue.find("r"))
    assert queue.done(r, now=100) is None  # 110 would be past 105
    assert spooled(queue) == [] and len(queue) == 0


def test_expired_lists_only_waiting_ones_past_their_deadline_and_ordered_skips_them(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    queue.put(ann("old", expires_at=10.0))
    queue.put(ann("new", expires_at=100.0))
    queue.put(ann("forever"))
    queue.put(ann("later", not_before=60.0))
    assert [a.id for a in queue.expired(now=50)] == ["old"]
    assert [a.id for a in queue.ordered(now=50)] == ["new", "forever"]
    assert len(queue) == 4  # expired() only reports: the announcer discards
    queue.discard(queue.find("old"))
    assert [i for i, _ in spooled(queue)] == ["new", "forever", "later"]


def test_requeue_release_and_discard_write_what_a_restart_must_see(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    for ident in ("resumed", "shutdown", "cancelled"):
        queue.put(ann(ident))
    resumed, shutdown, cancelled = (queue.find(i) for i in ("resumed", "shutdown", "cancelled"))
    queue.requeue(queue.pop(resumed), 2)  # barge-in: waits again from piece 2, an orderly end (attempts 0)
    queue.release(queue.pop(shutdown))  # cut by a shutdown: stays spooled, not waiting in this process
    queue.discard(cancelled)
    assert queue.ids() == ["resumed"] and spooled(queue) == [("resumed", 0), ("shutdown", 0)]
    replayed, expired = AnnouncementQueue(tmp_path).replay(now=0)
    assert [(a.id, a.cursor) for a in replayed] == [("resumed", 2), ("shutdown", 0)] and expired == []


def test_replay_restores_the_order_drops_the_expired_and_continues_the_sequence(tmp_path):
    before = AnnouncementQueue(tmp_path)
    before.put(ann("n1"))
    before.put(ann("stale", expires_at=50.0))
    before.put(ann("e1", Priority.EMERGENCY))
    before.pop(before.find("e1"))  # it was playing when the process died

    after = AnnouncementQueue(tmp_path)
    replayed, expired = after.replay(now=60)
    assert [a.id for a in replayed] == ["n1", "e1"] and [a.id for a in expired] == ["stale"]
    assert after.ids() == ["e1", "n1"]
    after.put(ann("n2"))
    assert after.find("n2").seq == 4 and after.ids() == ["e1", "n1", "n2"]
    assert spooled(after) == [("n1", 0), ("e1", 1), ("n2", 0)]
    assert after.put(ann("n1")) is Accepted.DUPLICATE  # the replayed ids are known


def test_one_the_process_died_on_twice_is_quarantined_and_never_replayed(tmp_path):
    first = AnnouncementQueue(tmp_path, max_attempts=2)
    first.put(ann("poison"))
    first.put(ann("fine"))
    for _life in range(2):  # each life pops it and dies while it plays (nothing ends it in order)
        life = AnnouncementQueue(tmp_path, max_attempts=2)
        life.replay(now=0)
        life.pop(life.find("poison"))
    survivor = AnnouncementQueue(tmp_path, max_attempts=2)
    replayed, expired = survivor.replay(now=0)
    assert [a.id for a in replayed] == ["fine"] and expired == []
    assert [(a.id, why) for a, why in survivor.quarantined] == [
        ("poison", "the daemon stopped 2 times while it played")
    ]
    [path] = quarantined(tmp_path)
    assert json.loads(path.read_text())["announcement"]["id"] == "poison"
    assert spooled(survivor) == [("fine", 0)]
    assert [a.id for a in AnnouncementQueue(tmp_path).replay(now=0)[0]] == ["fine"]  # never again


def test_an_orderly_interruption_does_not_count_as_a_failed_attempt(tmp_path):
    for life_number in range(3):
        life = AnnouncementQueue(tmp_path, max_attempts=2)
        life.replay(now=0)
        if life_number == 0:
            life.put(ann("resumed"))
        popped = life.pop(life.find("resumed"))
        life.requeue(popped, 0)  # barge-in with resume: spooled again with attempts 0
    assert [a.id for a in AnnouncementQueue(tmp_path).replay(now=0)[0]] == ["resumed"]
    assert quarantined(tmp_path) == []


def test_a_spool_write_that_fails_leaves_nothing_queued(tmp_path, monkeypatch):
    queue = AnnouncementQueue(tmp_path)

    def disk_full(ann):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(queue.spool, "write", disk_full)
    with pytest.raises(OSError, match="No space"):
        queue.put(ann("a"))
    assert len(queue) == 0 and not queue.recent.seen("a")  # a retry is not a duplicate
