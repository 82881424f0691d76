"""Exactly once, whatever the disk does (issue 37 item 2): with every write, fsync, rename, unlink (and
open) of the spool failing one at a time — once, or from then on like a disk that turns read-only —
then the disk healing and the daemon restarting, every announcement gets exactly one terminal event;
one that was heard or answered `error` is never spoken again. The faults go through the spool's seam
(`Spool.disk`); the real read-only disk is tests/integration/service/test_read_only_state.py. A process
that dies while the disk is still broken leaves what ended in the ledger in the runtime directory
(ended_ledger.py): the next start, on the broken disk still, replays none of it."""

from __future__ import annotations

import errno
import itertools
import os
import threading

import pytest
from announcer_fakes import TurnRig

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.ended_ledger import EndedLedger
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.announcements.spool import Spool

OPERATIONS = ("write", "fsync", "replace", "unlink", "open")
TERMINAL = ("finished", "error", "cancelled", "expired", "rejected")
SAID = {"first": "The first announcement.", "second": "The second one.", "third": "And a third."}


class FaultyDisk:
    """`os` for the spool, except that the `nth` call of `operation` fails (and, `lasting`, every
    changing call after it, as on a disk that turned read-only) until `heal()`."""

    def __init__(self, operation: str, nth: int, lasting: bool) -> None:
        self.operation, self.nth, self.lasting = operation, nth, lasting
        self.calls = 0
        self.hit = False
        self.healed = False

    def heal(self) -> None:
        self.healed = True

    def __getattr__(self, name: str):
        real = getattr(os, name)
        if name not in OPERATIONS:
            return real

        def call(*args, **kwargs):
            if name == self.operation:
                self.calls += 1
            failing = (name == self.operation and self.calls == self.nth) or (self.lasting and self.hit)
            if failing and not self.healed:
                self.hit = True
                raise OSError(errno.EROFS if self.lasting else errno.EIO, f"injected: {name} failed")
            return real(*args, **kwargs)

        return call


def first_life(rig: TurnRig, disk: FaultyDisk) -> None:
    """Three announcements through a faulty spool, until each has ended; then the disk heals."""
    rig.queue.spool.disk = disk
    rig.announcer.replay()
    for ann_id, text in SAID.items():
        rig.say(ann_id, text, repeat=2 if ann_id == "third" else 1)  # its second round: a spool write
    rig.run(lambda: all(ended(rig, ann_id) for ann_id in SAID), limit=5000)
    disk.heal()


def ends(rig: TurnRig, ann_id: str) -> list[str]:
    """Its terminal events (a `finished` that `repeats later` is not one)."""
    return [kind for kind, reason in rig.events(ann_id) if kind in TERMINAL and reason != "repeats later"]


def ended(rig: TurnRig, ann_id: str) -> bool:
    return bool(ends(rig, ann_id))


def restart(tmp_path) -> TurnRig:
    """The next process on the same spool: it replays what is left, and plays it out."""
    rig = TurnRig(tmp_path)
    rig.announcer.replay()
    rig.run(lambda: not rig.announcer.plays.playing and not rig.queue.ordered(rig.clock()), limit=5000)
    return rig


def check_exactly_once(before: TurnRig, after: TurnRig) -> None:
    for ann_id in SAID:
        assert len(ends(before, ann_id) + ends(after, ann_id)) == 1, (ann_id, before.events(ann_id))
        assert after.events(ann_id) == [], (ann_id, "spoken or answered again after the restart")
    assert after.spooled() == [] and after.queue.spool.pending == {}


@pytest.mark.parametrize("lasting", [False, True], ids=["once", "from then on"])
@pytest.mark.parametrize("operation", OPERATIONS)
def test_every_spool_fault_then_a_heal_and_a_restart_ends_each_announcement_once(
    tmp_path, operation, lasting
):
    faults = 0
    for nth in itertools.count(1):
        life = tmp_path / f"{nth}"
        disk = FaultyDisk(operation, nth, lasting)
        before = TurnRig(life)
        first_life(before, disk)
        if not disk.hit:
            break  # the run made fewer calls than that: every one of them has failed once
        faults += 1
        before.clock.advance(2.0)
        before.turn()  # the loop tries the pending removals again once the disk healed
        assert before.queue.spool.pending == {}
        stopped = threading.Event()
        stopped.set()
        before.announcer.run(stopped)  # an orderly stop
        check_exactly_once(before, restart(life))
    assert faults >= 3, f"only {faults} {operation} calls to fail"


def test_a_heal_seen_only_at_the_orderly_stop_still_removes_what_ended(tmp_path):
    disk = FaultyDisk("unlink", 1, lasting=True)
    before = TurnRig(tmp_path)
    first_life(before, disk)
    assert before.queue.spool.pending  # the disk healed, but no turn has retried yet
    stopped = threading.Event()
    stopped.set()
    before.announcer.run(stopped)  # its last act: the retry
    check_exactly_once(before, restart(tmp_path))


def test_a_say_answered_error_leaves_no_spool_file_even_when_only_the_directory_fsync_failed(tmp_path):
    disk = FaultyDisk("fsync", 2, lasting=False)  # the file's fsync passes; the directory's fails
    rig = TurnRig(tmp_path)
    rig.queue.spool.disk = disk
    rig.say("first", SAID["first"])
    rig.turn()
    assert rig.events("first") == [("error", "spool write failed: injected: fsync failed")]
    assert rig.spooled() == [] and rig.queue.spool.pending == {}  # the renamed file was taken back


def test_a_removal_that_keeps_failing_stays_pending_and_no_later_announcement_takes_its_name(tmp_path):
    queue = AnnouncementQueue(tmp_path)
    disk = FaultyDisk("fsync", 2, lasting=True)  # renamed into place, then the directory's fsync fails
    queue.spool.disk = disk
    with pytest.raises(OSError):
        queue.put(Announcement(id="first", text="One."))
    assert list(queue.spool.pending) == ["000000000001.json"]  # answered error: it must not replay
    disk.heal()
    queue.put(Announcement(id="second", text="Two."))
    assert queue.spool.retry() == 0
    assert [(ann.id, ann.seq) for ann in Spool(tmp_path).load()] == [("second", 2)]


class DeadDisk(FaultyDisk):
    """A spool disk that is broken from the start, as it still is after the process died on it."""

    def __init__(self) -> None:
        super().__init__("unlink", 0, lasting=True)
        self.hit = True  # every changing call fails, the first one too


def rig_with_ledger(life, disk=None) -> TurnRig:
    """The next process over the same spool and runtime directory (a new Spool, queue and announcer)."""
    rig = TurnRig(life, queue={"ledger_dir": life / "run"})
    if disk is not None:
        rig.queue.spool.disk = disk
    return rig


def restart_with_ledger(life) -> TurnRig:
    """The next process, on a healed disk: it replays what is left and plays it out."""
    rig = rig_with_ledger(life)
    rig.announcer.replay()
    rig.run(lambda: not rig.announcer.plays.playing and not rig.queue.ordered(rig.clock()), limit=5000)
    return rig


def ledger_of(rig: TurnRig) -> dict:
    """The ledger as the next process would read it from the runtime directory."""
    return EndedLedger(rig.tmp_path / "run", rig.settings.announcements.spool_dir).entries


@pytest.mark.parametrize("operation", ["unlink", "fsync"])
def test_a_restart_while_the_disk_is_still_broken_replays_nothing_that_ended(tmp_path, operation):
    disk = FaultyDisk(operation, 1 if operation == "unlink" else 3, lasting=True)
    before = rig_with_ledger(tmp_path)
    first_life(before, disk)  # each one ends; from the first failing call on no removal reaches the disk
    disk.healed = False  # ... and the disk stays broken: the process dies on it (no retry, no orderly stop)
    left = set(before.queue.spool.pending)
    assert left and set(ledger_of(before)) == left
    broken = rig_with_ledger(tmp_path, DeadDisk())
    broken.announcer.replay()
    broken.run(lambda: not broken.announcer.plays.playing and not broken.queue.ordered(broken.clock()))
    assert broken.events() == [] and broken.queue.ids() == []  # not spoken again, no second end
    assert set(broken.queue.spool.pending) == left and set(ledger_of(broken)) == left  # still to remove
    healed = restart_with_ledger(tmp_path)
    for ann_id in SAID:
        assert len(ends(before, ann_id)) == 1, (ann_id, before.events(ann_id))
    assert healed.events() == [] and healed.spooled() == [] and healed.queue.spool.pending == {}
    assert ledger_of(healed) == {}


def test_what_was_set_aside_at_a_start_on_a_broken_disk_is_reported_once_across_restarts(tmp_path):
    spool_dir = rig_with_ledger(tmp_path).settings.announcements.spool_dir
    Spool(spool_dir).write(Announcement(id="poison", text="Killed us twice.", seq=1, attempts=2))
    (spool_dir / "000000000002.json").write_text("{not json")
    for life in range(2):  # the first start sets both aside; the second, still on a broken disk, not again
        rig = rig_with_ledger(tmp_path, DeadDisk())
        rig.announcer.replay()
        rig.turn()
        if life == 0:
            assert [kind for kind, _ in rig.events()] == ["error", "error"], rig.events()
            assert [kind for kind, _ in rig.events("poison")] == ["error"]
        else:
            assert rig.events() == [], "reported again after a restart on the broken disk"
        assert set(ledger_of(rig)) == {"000000000001.json", "000000000002.json"}
    healed = restart_with_ledger(tmp_path)
    assert healed.events() == [] and healed.spooled() == [] and ledger_of(healed) == {}
    assert len(list((spool_dir / "quarantine").iterdir())) == 2
