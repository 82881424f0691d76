"""The spool: one fsynced JSON file per accepted announcement, and the quarantine beside it.

Each file is written to a temp name, fsynced and renamed (and the directory fsynced) before the MQTT
message is acknowledged, so a crash at any moment either keeps the announcement or leaves it
unacknowledged at the broker, which redelivers it. A file is as hostile as any other input: every file is
validated as a whole when read (announcement.py `from_json`), and anything malformed moves to
`quarantine/` with a log line and is listed in `unreadable` (the announcer sends its `error` event); it
never stops the daemon from starting. What the door would refuse is checked by the queue's replay.
A removal or quarantine move that fails is also listed in the ledger of ended files (ended_ledger.py),
so that a restart before the disk heals does not replay what ended.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.ended_ledger import QUARANTINE as MOVED
from qwen3tts.appliance.announcements.ended_ledger import REMOVE, EndedLedger

log = logging.getLogger(__name__)

SPOOL_VERSION = 1
MAX_FILE_BYTES = 1 << 20
"""No spooled announcement is this large (text is bounded far below it); a larger file is not one of ours."""


QUARANTINE = "quarantine"


@dataclass(frozen=True)
class Unreadable:
    """A spool file that was not an announcement: its name, the id it claims (unchecked) and why."""

    name: str
    claimed_id: object
    reason: str


def quarantined(spool_dir: Path) -> list[Path]:
    """Files in the quarantine beside the spool, oldest first (for `qwen3tts doctor`)."""
    directory = Path(spool_dir) / QUARANTINE
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if p.is_file()), key=lambda p: (p.stat().st_mtime, p.name))


class Spool:
    """One fsynced file per announcement: `<seq>.json`; unreadable ones go to `quarantine/`.

    `disk` is where its file calls go (`os`; a test's stand-in fails one of them). A removal or a move
    to the quarantine, or a write, that fails is kept in `pending` (the last change per file) and tried
    again by `retry()`: an announcement that ended is never replayed, nor a repeat or a resume point
    lost, once the disk heals before the next start (docs/announcer.md, "Exactly once"). A removal or
    move that fails is listed in the ledger in `ledger_dir` too (the runtime directory, another
    filesystem): `load()` keeps such a file's end pending and does not return it, even when the disk
    is still broken at the next start. Without `ledger_dir` the ledger lives in memory only.
    """

    def __init__(self, directory: Path, disk=os, ledger_dir: Path | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # a file is named as str, not Path: pathlib interns every part it parses, and each request's
        # new name would churn CPython's interned-strings table (docs/operations.md, "Memory")
        self._dir = str(self.directory)
        self.disk = disk
        self.ledger = EndedLedger(ledger_dir, self.directory)
        self.ended_earlier: list[Announcement] = []
        """Readable files the last `load()` left out because the ledger lists them as ended."""
        self.unreadable: list[Unreadable] = []
        """Files `load()` quarantined since the owner last took them (`take_unreadable`)."""
        self.pending: dict[str, Callable[[], None]] = {}
        """File name -> the write, removal or move that failed last, to try again (`retry`)."""

    def path_of(self, ann: Announcement) -> str:
        return os.path.join(self._dir, f"{ann.seq:012d}.json")

    def write(self, ann: Announcement) -> None:
        """Store `ann` durably; when this returns the announcement survives a power cut. OSError when it
        cannot: this copy is then `pending` (written once the disk heals, unless a later change to the
        same file replaces it)."""
        data = json.dumps({"version": SPOOL_VERSION, "announcement": ann.to_json()}).encode("utf-8")
        final = self.path_of(ann)
        self._deferred(os.path.basename(final), ann.id, lambda: self._write_file(final, data))

    def _write_file(self, final: str, data: bytes) -> None:
        tmp = final + ".tmp"
        fd = self.disk.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            self.disk.write(fd, data)
            self.disk.fsync(fd)
        finally:
            self.disk.close(fd)
        self.disk.replace(tmp, final)
        self._fsync_directory()

    def remove(self, ann: Announcement) -> None:
        """Remove `ann`'s file for good; OSError when it cannot (it is then `pending`, retried)."""
        path = self.path_of(ann)
        self._deferred(os.path.basename(path), ann.id, lambda: self._unlink(path), ends=REMOVE)

    def retry(self) -> int:
        """Try the pending removals and moves again; how many still fail (never raises)."""
        for name, action in list(self.pending.items()):
            try:
                action()
            except OSError:
                continue
            del self.pending[name]
            self.ledger.forget(name)
            log.info("spool: %s done after the disk healed", name)
        return len(self.pending)

    def load(self) -> list[Announcement]:
        """Every stored announcement in spool order; corrupt entries are quarantined, not fatal. Files
        the ledger lists as ended with the same id are left out (in `ended_earlier`), their end pending."""
        for leftover in self.directory.glob("*.json.tmp"):
            # Written but never renamed: never acknowledged, so the broker still holds the message.
            try:
                leftover.unlink(missing_ok=True)
            except OSError as exc:  # a read-only spool: harmless, it is never read as an announcement
                log.warning("cannot delete the unfinished spool write %s: %s", leftover.name, exc.strerror)
        loaded, self.ended_earlier = [], []
        for path in sorted(self.directory.glob("*.json")):
            try:
                ann = self._read(path)
            except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
                if not self._ended_earlier(path.name, ""):
                    self._quarantine(path, exc)
                continue
            if self._ended_earlier(path.name, ann.id):
                self.ended_earlier.append(ann)
            else:
                loaded.append(ann)
        for name in list(self.ledger.entries):
            if not (self.directory / name).exists():  # removed, perhaps without the directory's fsync
                self._ended_earlier(name, self.ledger.entries[name][0])
        self.retry()
        return loaded

    def _ended_earlier(self, name: str, ann_id: str) -> bool:
        """Whether the ledger lists `name` as ended with `ann_id` (its end is pending again then); an
        entry for another id is stale (that name holds a newer file) and is dropped."""
        entry = self.ledger.ended(name)
        if entry is None:
            return False
        if entry[0] != ann_id:
            self.ledger.forget(name)
            return False
        path = os.path.join(self._dir, name)
        action = self._unlink if entry[1] == REMOVE else self._move_to_quarantine
        self.pending[name] = lambda: action(path)
        log.warning(
            "%s: %s ended before the last stop; not replayed (its %s is pending)", ann_id, name, entry[1]
        )
        return True

    def _read(self, path: Path) -> Announcement:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        doc = json.loads(path.read_bytes().decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("version") != SPOOL_VERSION or "announcement" not in doc:
            raise ValueError(f"not a spool file of version {SPOOL_VERSION}")
        ann = Announcement.from_json(doc["announcement"])
        if f"{ann.seq:012d}.json" != path.name:
            raise ValueError(f"sequence {ann.seq} does not match the file name")
        return ann

    def quarantine(self, ann: Announcement, why: str) -> None:
        """Move a spooled announcement out of the way for good; OSError when it cannot (then `pending`)."""
        path = self.path_of(ann)
        self._deferred(os.path.basename(path), ann.id, lambda: self._move_to_quarantine(path), ends=MOVED)
        log.error("%s: quarantined (%s)", ann.id, why)

    def take_unreadable(self) -> list[Unreadable]:
        taken, self.unreadable = self.unreadable, []
        return taken

    def _quarantine(self, path: Path, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {str(exc)[:200]}"
        self.unreadable.append(Unreadable(path.name, _claimed_id(path), reason))
        log.warning("spool entry %s is corrupt (%s); moved to %s/", path.name, reason, QUARANTINE)
        try:
            self._deferred(path.name, "", lambda: self._move_to_quarantine(path), ends=MOVED)  # no valid id
        except OSError as move_error:  # a read-only spool: it is skipped now, moved once the disk heals
            log.error("cannot move %s to the quarantine: %s", path.name, move_error.strerror)

    def _deferred(self, name: str, ann_id: str, action: Callable[[], None], ends: str | None = None) -> None:
        """Do `action` now; when it fails keep it for `retry` and raise. An `action` that `ends` the file
        (a removal, a move) is listed in the ledger when it fails, and leaves it when it is done."""
        try:
            action()
        except OSError:
            self.pending[name] = action
            if ends is not None:
                self.ledger.record(name, ann_id, ends)
            raise
        self.pending.pop(name, None)
        self.ledger.forget(name)

    def _unlink(self, path: str) -> None:
        try:
            self.disk.unlink(path)
        except FileNotFoundError:
            if os.path.basename(path) not in self.pending:
                return  # never written (a put that failed early) or removed before
            # an earlier try unlinked it but could not fsync the directory: that is what is left
        self._fsync_directory()

    def _move_to_quarantine(self, path: str | Path) -> None:
        if not os.path.exists(path):
            return
        target_dir = os.path.join(self._dir, QUARANTINE)
        os.makedirs(target_dir, exist_ok=True)
        self.disk.replace(path, os.path.join(target_dir, f"{os.path.basename(path)}.{int(time.time())}"))
        self._fsync_directory()

    def _fsync_directory(self) -> None:
        fd = self.disk.open(self.directory, os.O_RDONLY)
        try:
            self.disk.fsync(fd)
        finally:
            self.disk.close(fd)


def _claimed_id(path: Path) -> object:
    """The `id` a corrupt file holds, if it is JSON at all (the caller checks it is a valid id)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    inner = doc.get("announcement") if isinstance(doc, dict) else None
    return inner.get("id") if isinstance(inner, dict) else None
