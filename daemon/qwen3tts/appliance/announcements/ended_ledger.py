"""The ledger of ended spool files: what ended but could not be removed from a broken state directory.

When the spool cannot remove (or move to the quarantine) the file of an announcement that ended, the
removal is kept pending in memory and retried (spool.py). A process that stops or dies before the disk
heals would lose that memory, and the next start would replay the file: an announcement already heard
plays again, one answered `error` is spoken later. So each such file is also written here, with the id
of its announcement, on another filesystem: the daemon's runtime directory (systemd's
$RUNTIME_DIRECTORY, a tmpfs kept across restarts by `RuntimeDirectoryPreserve=restart`). The next start
treats a spool file listed here with the same id as ended. A reboot clears it: the one remaining limit
(docs/announcer.md, "Exactly once, whatever the disk does").

The file is ours, but read as hostile all the same: anything malformed in it is ignored with a log line.
Its name carries a hash of the spool directory, so daemons (or tests) with other spools never share one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)

LEDGER_VERSION = 1
MAX_LEDGER_BYTES = 1 << 20
REMOVE = "remove"
QUARANTINE = "quarantine"
SPOOL_FILE_NAME = re.compile(r"\d{12}\.json")


class EndedLedger:
    """Spool file name -> (announcement id, how it ends: `remove` or `quarantine`), kept in `directory`.

    `directory` None keeps it in memory only (no runtime directory: the behaviour before the ledger).
    Every change is written to a temp file, fsynced and renamed; one that cannot be written is logged
    and kept in memory (nothing more can be done).
    """

    def __init__(self, directory: Path | None, spool_dir: Path) -> None:
        self.spool_dir = str(Path(spool_dir).resolve())
        digest = hashlib.sha256(self.spool_dir.encode("utf-8")).hexdigest()[:16]
        self.path = None if directory is None else Path(directory) / f"ended-spool-files-{digest}.json"
        self.entries: dict[str, tuple[str, str]] = self._read()

    def ended(self, name: str) -> tuple[str, str] | None:
        """(id, how) of the spool file `name` when it ended earlier, else None."""
        return self.entries.get(name)

    def record(self, name: str, ann_id: str, how: str) -> None:
        if self.entries.get(name) == (ann_id, how):
            return
        self.entries[name] = (ann_id, how)
        self._save()
        log.warning("%s: %s could not be ended on disk; listed in the ledger %s", ann_id, name, self.path)

    def forget(self, name: str) -> None:
        if self.entries.pop(name, None) is not None:
            self._save()

    def _read(self) -> dict[str, tuple[str, str]]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            if self.path.stat().st_size > MAX_LEDGER_BYTES:
                raise ValueError(f"larger than {MAX_LEDGER_BYTES} bytes")
            doc = json.loads(self.path.read_bytes().decode("utf-8"))
            return _entries(doc, self.spool_dir)
        except (OSError, ValueError, RecursionError) as exc:
            log.error("ignoring the ledger of ended spool files %s: %s", self.path, exc)
            return {}

    def _save(self) -> None:
        if self.path is None:
            return
        doc = {"version": LEDGER_VERSION, "spool_dir": self.spool_dir,
               "ended": {name: list(entry) for name, entry in sorted(self.entries.items())}}  # fmt: skip
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, json.dumps(doc).encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:  # the runtime directory is broken too: a restart now may replay these
            log.error("cannot write the ledger of ended spool files %s: %s", self.path, exc.strerror or exc)


def _entries(doc: object, spool_dir: str) -> dict[str, tuple[str, str]]:
    """The valid entries of a ledger document; ValueError when it is not a ledger of this spool."""
    if not isinstance(doc, dict) or doc.get("version") != LEDGER_VERSION:
        raise ValueError(f"not a ledger of version {LEDGER_VERSION}")
    if doc.get("spool_dir") != spool_dir:
        raise ValueError(f"a ledger of another spool ({str(doc.get('spool_dir'))[:200]})")
    ended = doc.get("ended")
    if not isinstance(ended, dict):
        raise ValueError("no `ended` table")
    entries = {}
    for name, entry in ended.items():
        valid = (
            SPOOL_FILE_NAME.fullmatch(name) is not None
            and isinstance(entry, list) and len(entry) == 2
            and isinstance(entry[0], str) and entry[1] in (REMOVE, QUARANTINE)
        )  # fmt: skip
        if valid:
            entries[name] = (entry[0], entry[1])
        else:
            log.error("ignoring a malformed entry %r of the ledger of ended spool files", name[:100])
    return entries
