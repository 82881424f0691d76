"""The durable priority queue of accepted announcements.

`Spool` keeps one JSON file per accepted announcement in the state directory, written to a temp
file, fsynced and renamed (and the directory fsynced) before the MQTT message is acknowledged, so
a crash at any moment either keeps the announcement or leaves it unacknowledged at the broker,
which redelivers it. `AnnouncementQueue` orders the accepted ones in memory: emergency > priority
> normal, first in first out within a level; an entry leaves the spool only when it finished,
was cancelled or expired.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

from qwen3tts.appliance.announcement import Announcement
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

SPOOL_VERSION = 1


class Spool:
    """One fsynced file per announcement: `<seq>.json`; unreadable ones go to `quarantine/`."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path_of(self, ann: Announcement) -> Path:
        return self.directory / f"{ann.seq:012d}.json"

    def write(self, ann: Announcement) -> None:
        """Store `ann` durably; when this returns the announcement survives a power cut."""
        final = self.path_of(ann)
        tmp = final.with_suffix(".json.tmp")
        data = json.dumps({"version": SPOOL_VERSION, "announcement": ann.to_json()}).encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
        self._fsync_directory()

    def remove(self, ann: Announcement) -> None:
        try:
            self.path_of(ann).unlink()
        except FileNotFoundError:
            return
        self._fsync_directory()

    def load(self) -> list[Announcement]:
        """Every stored announcement in spool order; corrupt entries are quarantined, not fatal."""
        for leftover in self.directory.glob("*.json.tmp"):
            # Written but never renamed: never acknowledged, so the broker still holds the message.
            leftover.unlink(missing_ok=True)
        loaded = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                loaded.append(self._read(path))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self._quarantine(path, exc)
        return loaded

    def _read(self, path: Path) -> Announcement:
        doc = json.loads(path.read_bytes().decode("utf-8"))
        if doc.get("version") != SPOOL_VERSION:
            raise ValueError(f"unknown spool version {doc.get('version')!r}")
        ann = Announcement.from_json(doc["announcement"])
        if f"{ann.seq:012d}.json" != path.name:
            raise ValueError(f"sequence {ann.seq} does not match the file name")
        return ann

    def _quarantine(self, path: Path, exc: Exception) -> None:
        target_dir = self.directory / "quarantine"
        target_dir.mkdir(exist_ok=True)
        target = target_dir / f"{path.name}.{int(time.time())}"
        log.warning("spool entry %s is corrupt (%s: %s); moved to %s", path, type(exc).__name__, exc, target)
        os.replace(path, target)

    def _fsync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class AnnouncementQueue:
    """Thread-safe priority queue over a `Spool`; the intake puts, the player pops.

    An announcement is *queued* (waiting), *in progress* (popped, being spoken; still spooled so a
    crash replays it), or gone (finished, cancelled or expired: removed from the spool).
    """

    def __init__(self, spool_dir: Path, *, max_queue: int = 100) -> None:
        self.spool = Spool(spool_dir)
        self.max_queue = max_queue
        self._waiting: list[Announcement] = []
        self._in_progress: dict[str, Announcement] = {}
        self._next_seq = 1
        self._cond = threading.Condition()

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting)

    def ids(self) -> list[str]:
        """Ids of waiting announcements in the order they would play."""
        with self._cond:
            return [a.id for a in sorted(self._waiting, key=Announcement.rank)]

    def replay(self, now: float | None = None) -> tuple[list[Announcement], list[Announcement]]:
        """Load the spool after a start: (replayed and queued again, expired and removed)."""
        now = time.time() if now is None else now
        replayed, expired = [], []
        with self._cond:
            for ann in self.spool.load():
                self._next_seq = max(self._next_seq, ann.seq + 1)
                if ann.expired(now):
                    self.spool.remove(ann)
                    expired.append(ann)
                else:
                    self._waiting.append(ann)
                    replayed.append(ann)
            self._cond.notify_all()
        return replayed, expired

    def put(self, ann: Announcement) -> None:
        """Spool `ann` (fsynced) and queue it; raises RequestError when the queue is full."""
        with self._cond:
            if len(self._waiting) >= self.max_queue:
                raise RequestError(f"queue full ({self.max_queue} announcements waiting)")
            ann.seq = self._next_seq
            self.spool.write(ann)
            self._next_seq += 1
            self._waiting.append(ann)
            self._cond.notify_all()

    def pop_next(self, now: float | None = None) -> Announcement | None:
        """The most urgent waiting announcement that may play now (it stays spooled), or None."""
        now = time.time() if now is None else now
        with self._cond:
            ready = [a for a in self._waiting if a.not_before <= now and not a.expired(now)]
            if not ready:
                return None
            ann = min(ready, key=Announcement.rank)
            self._waiting.remove(ann)
            self._in_progress[ann.id] = ann
            return ann

    def peek_priority(self, now: float | None = None) -> str | None:
        """Priority of what `pop_next` would return (to decide on barge-in), or None."""
        now = time.time() if now is None else now
        with self._cond:
            ready = [a for a in self._waiting if a.not_before <= now and not a.expired(now)]
            return min(ready, key=Announcement.rank).priority if ready else None

    def wait(self, timeout: float) -> bool:
        """Block up to `timeout` s until something may play now; True if so.

        A repeat whose interval runs out is noticed only at the timeout, so keep it short (0.1-0.5 s).
        """
        with self._cond:
            return self._cond.wait_for(
                lambda: any(a.not_before <= time.time() for a in self._waiting), timeout
            )

    def done(self, ann: Announcement, now: float | None = None) -> bool:
        """A popped announcement finished playing; True if it was queued again for a repeat."""
        now = time.time() if now is None else now
        with self._cond:
            self._in_progress.pop(ann.id, None)
            ann.plays_done += 1
            if ann.plays_done < ann.repeat and not ann.expired(now + ann.repeat_interval):
                ann.not_before = now + ann.repeat_interval
                self.spool.write(ann)
                self._waiting.append(ann)
                self._cond.notify_all()
                return True
            self.spool.remove(ann)
            return False

    def requeue(self, ann: Announcement) -> None:
        """Put a popped announcement back unchanged (barge-in with `interrupted: resume`)."""
        with self._cond:
            self._in_progress.pop(ann.id, None)
            self._waiting.append(ann)
            self._cond.notify_all()

    def discard(self, ann: Announcement) -> None:
        """A popped announcement was cancelled or failed: forget it and drop it from the spool."""
        with self._cond:
            self._in_progress.pop(ann.id, None)
            self.spool.remove(ann)

    def remove(self, ann_id: str) -> Announcement | None:
        """Cancel a waiting announcement by id; None if no waiting announcement has that id."""
        with self._cond:
            for ann in self._waiting:
                if ann.id == ann_id:
                    self._waiting.remove(ann)
                    self.spool.remove(ann)
                    return ann
            return None

    def clear(self) -> list[Announcement]:
        """Cancel every waiting announcement (stop scope all); returns them in play order."""
        with self._cond:
            gone = sorted(self._waiting, key=Announcement.rank)
            self._waiting.clear()
            for ann in gone:
                self.spool.remove(ann)
            return gone

    def expire(self, now: float | None = None) -> list[Announcement]:
        """Remove waiting announcements whose time is up; returns them for `expired` events."""
        now = time.time() if now is None else now
        with self._cond:
            gone = [a for a in self._waiting if a.expired(now)]
            for ann in gone:
                self._waiting.remove(ann)
                self.spool.remove(ann)
            return gone
