"""The durable priority queue of accepted announcements; only the announcer's loop uses it.

Waiting announcements are ordered emergency > priority > normal, first in first out within a level. An
announcement is *waiting*, *current* (popped, being spoken; still spooled so a crash replays it) or gone
(finished, cancelled, expired, failed: removed from the spool). Every change is written to the spool
(spool.py) before it returns; an announcement is a frozen record, so each change is a new copy the
method returns, and the queue holds the copy it spooled last. The queue also keeps the duplicate memory
(recent_ids.py): an id it has accepted is not accepted again, nor a broker's redelivery of a message it
has already spooled.

Poison: each time an announcement becomes the current one its `attempts` count is spooled; an orderly
end (finished, interrupted, repeat, shutdown) resets it. An entry found at start-up with `max_attempts`
unfinished attempts killed the process that many times: it moves to the quarantine and is never replayed.

An announcement with pre-rendered media (media.py) is queued and ordered like any other but never
spooled: its samples live in memory only.

One owner, no lock: the announcer's thread is the only caller, except `len()` and `ids()` (read-only
copies, for the status and the servers' /metrics).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Protocol

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.recent_ids import FILE_NAME, RecentIds
from qwen3tts.appliance.announcements.spool import Spool
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)


class SpooledCheck(Protocol):
    """The door's validation of a spooled entry (appliance/mqtt/spooled.py), handed in by the service."""

    def __call__(self, ann: Announcement, now: float) -> None: ...

    def readable_id(self, value: object) -> str | None: ...


class Accepted(Enum):
    """What `put()` did with an announcement."""

    QUEUED = "queued"
    DUPLICATE = "a duplicate of an announcement already accepted"
    REDELIVERY = "the broker's redelivery of a message already spooled"


class AnnouncementQueue:
    """Priority queue over a `Spool`, with the duplicate memory of what it accepted."""

    def __init__(
        self, spool_dir: Path, *, max_queue: int = 100, max_attempts: int = 2, dedup_window: int = 1000,
        ledger_dir: Path | None = None,
    ):  # fmt: skip
        """`ledger_dir`: where the spool lists the files that ended but could not be removed (the
        runtime directory, on another filesystem: spool.py, ended_ledger.py)."""
        self.spool = Spool(spool_dir, ledger_dir=ledger_dir)
        self.max_queue = max_queue
        self.max_attempts = max_attempts
        self.recent = RecentIds(dedup_window, self.spool.directory / FILE_NAME)
        self._waiting: list[Announcement] = []
        self._next_seq = 1
        self.quarantined: list[tuple[Announcement, str]] = []
        """Announcements this process set aside at start, with why (the announcer reports them)."""

    def __len__(self) -> int:
        return len(self._waiting)

    def ids(self) -> list[str]:
        """Ids of waiting announcements in the order they would play."""
        return [a.id for a in sorted(list(self._waiting), key=Announcement.rank)]

    def waiting(self) -> list[Announcement]:
        """Every waiting announcement in play order (also those not due yet)."""
        return sorted(self._waiting, key=Announcement.rank)

    def replay(
        self, now: float, read: Callable[[Announcement], Announcement] = lambda ann: ann,
        check: SpooledCheck | None = None, ended: Collection[str] = (),
    ) -> tuple[list[Announcement], list[Announcement]]:  # fmt: skip
        """Load the spool after a start: (replayed and waiting again, expired and removed); `read` gives
        each one that waits again its text as read (LookAhead.read).

        `check(ann, now)` is the door's own validation of a spooled entry (RequestError says why it
        would not take it). Entries it refuses, entries that reached `max_attempts` and files that were
        not announcements at all are quarantined instead, returned with neither and listed with their
        reason in `quarantined`. An entry whose id is in `ended` ended before the stop (its end is owed,
        service/owed_events.py): it is removed, neither replayed nor reported.
        """
        replayed, expired, ids = [], [], set()
        loaded = self.spool.load()
        for ann in self.spool.ended_earlier:  # ended before the last stop (its terminal event went out)
            self._remember(ann)
        for ann in loaded:
            self._remember(ann)
            why = (
                "another spooled announcement has its id" if ann.id in ids else self._refusal(ann, now, check)
            )
            ids.add(ann.id)
            if ann.id in ended:
                log.info("%s: it ended before the last stop; not replayed", ann.id)
                self._remove_ended(ann)
            elif why is not None:
                self._set_aside(ann, why)
            elif ann.expired(now):
                self._remove_ended(ann)
                expired.append(ann)
            else:
                ann = read(ann)
                self._waiting.append(ann)
                replayed.append(ann)
        for entry in self.spool.take_unreadable():
            claimed = check.readable_id(entry.claimed_id) if check is not None else None
            claimed = None if claimed in ids else claimed  # not an event for another, readable one
            ann = Announcement(id=claimed or "", text="")
            self.quarantined.append((ann, f"unreadable spool file {entry.name}: {entry.reason}"))
        if replayed:
            log.info("replayed %d spooled announcements: %s", len(replayed), [a.id for a in replayed])
        return replayed, expired

    def _remember(self, ann: Announcement) -> None:
        """A spooled announcement's sequence number is never used again, nor its id accepted again."""
        self._next_seq = max(self._next_seq, ann.seq + 1)
        self.recent.add(ann.id, ann, message_id=ann.message_id, persist=False)  # the spool remembers them

    def _refusal(self, ann: Announcement, now: float, check: SpooledCheck | None) -> str | None:
        if ann.attempts >= self.max_attempts:
            return f"the daemon stopped {self.max_attempts} times while it played"
        if check is None:
            return None
        try:
            check(ann, now)
        except RequestError as exc:  # SSMLError is one too
            return f"the door would refuse it: {exc}"
        except ValueError as exc:  # content no check foresaw: set this entry aside, never stop the start
            log.error("%s: the spool check failed on it: %r", ann.id, exc)
            return f"it could not be checked: {type(exc).__name__}: {exc}"
        return None

    def _remove_ended(self, ann: Announcement) -> None:
        try:
            self._remove(ann)
        except OSError as exc:  # pending in the spool: removed once the disk heals
            log.warning("%s: its spool file stays until the disk heals: %s", ann.id, exc.strerror or exc)

    def _set_aside(self, ann: Announcement, why: str) -> None:
        """Quarantine `ann` for good; when the spool cannot move it, it stays where it is (it is not
        replayed now; the move is pending, and listed in the ledger so the next start neither replays
        it nor reports it again)."""
        try:
            self.spool.quarantine(ann, why)
        except OSError as exc:
            log.error("%s: cannot move it to the quarantine (%s): %s", ann.id, why, exc.strerror or exc)
        self.quarantined.append((ann, why))

    def put(self, ann: Announcement, redelivered: bool = False) -> Accepted:
        """Spool `ann` (fsynced) and queue it with its `seq`, unless it is a duplicate.

        RequestError when the queue is full; OSError when the spool cannot be written (nothing is queued,
        and nothing of it replays).
        `redelivered` is the MQTT DUP flag it came with (`ann.message_id` its packet id).
        """
        if self.recent.seen(ann.id):
            return Accepted.DUPLICATE
        if redelivered and self.recent.redelivered(ann, ann.message_id) is not None:
            return Accepted.REDELIVERY
        if len(self._waiting) >= self.max_queue:
            raise RequestError(f"queue full ({self.max_queue} announcements waiting)")
        ann = replace(ann, seq=self._next_seq)
        self._next_seq += 1  # even when the write fails: a removal still pending must not hit a newer file
        self._written_or_gone(ann)
        self._waiting.append(ann)
        self.recent.add(ann.id, ann, message_id=ann.message_id)
        return Accepted.QUEUED

    def ordered(self, now: float) -> list[Announcement]:
        """Waiting announcements that may play now, in the order they would play."""
        due = (a for a in self._waiting if a.not_before <= now and not a.expired(now))
        return sorted(due, key=Announcement.rank)

    def pop(self, ann: Announcement) -> Announcement:
        """`ann` (waiting) becomes the current one; its attempt is spooled before it plays, so a process
        that dies now counts against it. OSError if that cannot be written (it is then no longer waiting,
        and gone from the spool: it ends with `error`)."""
        self._waiting.remove(ann)
        ann = replace(ann, attempts=ann.attempts + 1)
        self._written_or_gone(ann)
        return ann

    def _written_or_gone(self, ann: Announcement) -> None:
        """Spool `ann`; when that fails it ends with `error`, so its file must not replay: removed now,
        or pending in the spool until the disk heals (spool.py `retry`). Raises the write's OSError."""
        try:
            self._write(ann)
        except OSError:
            self._remove_ended(ann)
            raise

    def repeats(self, ann: Announcement, now: float) -> bool:
        """Whether `ann`, finishing a round now, plays another one (`done` spools it again) or ends."""
        return ann.plays_done + 1 < ann.repeat and not ann.expired(now + ann.repeat_interval)

    def done(self, ann: Announcement, now: float) -> Announcement | None:
        """The current announcement finished playing; the copy that waits again for a repeat, or None."""
        if self.repeats(ann, now):
            ann = replace(ann, plays_done=ann.plays_done + 1, attempts=0, cursor=0,
                          not_before=now + ann.repeat_interval)  # fmt: skip
            self._waiting.append(ann)
            try:
                self._write(ann)
            except OSError as exc:  # it repeats all the same; the spool writes it once the disk heals
                log.warning(
                    "%s: its next round is spooled once the disk heals: %s", ann.id, exc.strerror or exc
                )
            return ann
        self._remove(ann)
        return None

    def requeue(self, ann: Announcement, cursor: int) -> Announcement:
        """The current announcement waits again, to resume from sentence `cursor` (spooled: a crash
        does too)."""
        ann = replace(ann, cursor=cursor, attempts=0)  # it was interrupted in order, not by a crash
        self._waiting.append(ann)
        self._write(ann)
        return ann

    def release(self, ann: Announcement) -> None:
        """The current announcement stopped in order without ending (shutdown): it stays spooled."""
        self._write(replace(ann, attempts=0))

    def discard(self, ann: Announcement) -> None:
        """`ann` is gone (cancelled, failed, expired): out of the queue if it waited, out of the spool."""
        self._waiting = [waiting for waiting in self._waiting if waiting.seq != ann.seq]
        self._remove(ann)

    def change(self, ann: Announcement, **changes) -> Announcement:
        """A waiting announcement changed (a renderer's gain): the queue holds, and spools, the new copy."""
        changed = replace(ann, **changes)
        self._waiting = [changed if waiting is ann else waiting for waiting in self._waiting]
        self._write(changed)
        return changed

    def find(self, ann_id: str) -> Announcement | None:
        return next((a for a in self._waiting if a.id == ann_id), None)

    def expired(self, now: float) -> list[Announcement]:
        """Waiting announcements whose time is up (still queued: the caller discards them)."""
        return [a for a in self._waiting if a.expired(now)]

    def _write(self, ann: Announcement) -> None:
        if ann.spooled:  # media is not: lost with the process, as a controller expects of a renderer
            self.spool.write(ann)

    def _remove(self, ann: Announcement) -> None:
        if ann.spooled:
            self.spool.remove(ann)
