"""The durable priority queue of accepted announcements, and the quarantine beside it.

`Spool` keeps one JSON file per accepted announcement in the state directory, written to a temp
file, fsynced and renamed (and the directory fsynced) before the MQTT message is acknowledged, so
a crash at any moment either keeps the announcement or leaves it unacknowledged at the broker,
which redelivers it. `AnnouncementQueue` orders the accepted ones in memory: emergency > priority
> normal, first in first out within a level; an entry leaves the spool only when it finished,
was cancelled, expired or failed.

Poison: each time an announcement becomes the playing one its `attempts` count is spooled; an
orderly end (finished, interrupted, repeat) resets it. An entry found at start-up with `max_attempts`
unfinished attempts killed the process that many times: it moves to `<spool>/quarantine/` and is
never replayed (`quarantined()` lists them for `qwen3tts doctor`). Unreadable entries go there too.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from qwen3tts.appliance.announcement import Announcement
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

SPOOL_VERSION = 1


QUARANTINE = "quarantine"


def quarantined(spool_dir: Path) -> list[Path]:
    """Files in the quarantine beside the spool, oldest first (for `qwen3tts doctor`)."""
    directory = Path(spool_dir) / QUARANTINE
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if p.is_file()), key=lambda p: (p.stat().st_mtime, p.name))


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

    def quarantine(self, ann: Announcement, why: str) -> Path:
        """Move a spooled announcement out of the way for good; returns where it went."""
        target = self._quarantine_path(self.path_of(ann))
        os.replace(self.path_of(ann), target)
        self._fsync_directory()
        log.error("%s: quarantined to %s (%s)", ann.id, target, why)
        return target

    def _quarantine(self, path: Path, exc: Exception) -> None:
        target = self._quarantine_path(path)
        log.warning("spool entry %s is corrupt (%s: %s); moved to %s", path, type(exc).__name__, exc, target)
        os.replace(path, target)

    def _quarantine_path(self, path: Path) -> Path:
        target_dir = self.directory / QUARANTINE
        target_dir.mkdir(exist_ok=True)
        return target_dir / f"{path.name}.{int(time.time())}"

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

    def __init__(
        self,
        spool_dir: Path,
        *,
        max_queue: int = 100,
        max_attempts: int = 2,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.spool = Spool(spool_dir)
        self.max_queue = max_queue
        self.max_attempts = max_attempts
        self.on_change = on_change
        """Called after every put (the announcer wakes up at once for an emergency)."""
        self._waiting: list[Announcement] = []
        self._in_progress: dict[str, Announcement] = {}
        self._next_seq = 1
        self._cond = threading.Condition()
        self.quarantined: list[Announcement] = []
        """Announcements this process moved to the quarantine (the announcer reports them)."""

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting)

    def ids(self) -> list[str]:
        """Ids of waiting announcements in the order they would play."""
        with self._cond:
            return [a.id for a in sorted(self._waiting, key=Announcement.rank)]

    def replay(self, now: float | None = None) -> tuple[list[Announcement], list[Announcement]]:
        """Load the spool after a start: (replayed and queued again, expired and removed).

        Entries that reached `max_attempts` are quarantined instead and returned with neither.
        """
        now = time.time() if now is None else now
        replayed, expired = [], []
        with self._cond:
            for ann in self.spool.load():
                self._next_seq = max(self._next_seq, ann.seq + 1)
                if ann.attempts >= self.max_attempts:
                    self.spool.quarantine(ann, f"the process ended {ann.attempts} times while it played")
                    self.quarantined.append(ann)
                elif ann.expired(now):
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
        self.on_change()

    def ordered(self, now: float | None = None) -> list[Announcement]:
        """Waiting announcements that may play now, in the order they would play."""
        now = time.time() if now is None else now
        with self._cond:
            ready = [a for a in self._waiting if a.not_before <= now and not a.expired(now)]
        return sorted(ready, key=Announcement.rank)

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
            ann.attempts += 1  # spooled before it plays: a process that dies now counts against it
            self.spool.write(ann)
            return ann

    def done(self, ann: Announcement, now: float | None = None) -> bool:
        """A popped announcement finished playing; True if it was queued again for a repeat."""
        now = time.time() if now is None else now
        with self._cond:
            self._in_progress.pop(ann.id, None)
            ann.plays_done += 1
            ann.attempts, ann.cursor = 0, 0
            if ann.plays_done < ann.repeat and not ann.expired(now + ann.repeat_interval):
                ann.not_before = now + ann.repeat_interval
                self.spool.write(ann)
                self._waiting.append(ann)
                self._cond.notify_all()
                return True
            self.spool.remove(ann)
            return False

    def requeue(self, ann: Announcement) -> None:
        """Put a popped announcement back to resume from `ann.cursor` (spooled so a crash does too)."""
        with self._cond:
            self._in_progress.pop(ann.id, None)
            ann.attempts = 0  # it was interrupted in order, not by a crash
            self.spool.write(ann)
            self._waiting.append(ann)
            self._cond.notify_all()

    def release(self, ann: Announcement) -> None:
        """A popped announcement stopped in order without ending (shutdown): it stays spooled."""
        with self._cond:
            self._in_progress.pop(ann.id, None)
            ann.attempts = 0
            self.spool.write(ann)

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
