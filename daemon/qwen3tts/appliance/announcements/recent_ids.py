"""The duplicate memory: recent announcement ids and content fingerprints, kept beside the spool.

Two kinds of repeat must not be spoken twice: a request sent again with the same `id`, and the
broker's redelivery (MQTT DUP flag) of a message we had spooled but not yet acknowledged when the
process died. The second one may carry no id at all (the intake generated one), so besides ids we
remember a fingerprint of the message: its content and its MQTT packet id. The packet id is what makes
a redelivery one: five identical id-less messages are five announcements (five packet ids), and a packet
id comes round again only after 65535 others, long after it left the window. Ids and fingerprints
survive restarts: each
accepted announcement appends one JSON line (fsynced) to `recent-ids.jsonl`; the file is rewritten
with only the last `window` entries when it grows to twice that. A torn last line is skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import OrderedDict
from pathlib import Path

from qwen3tts.appliance.announcements.announcement import Announcement

log = logging.getLogger(__name__)

FILE_NAME = "recent-ids.jsonl"
_CONTENT_FIELDS = (
    "text",
    "priority",
    "lang",
    "voice",
    "instruct",
    "volume",
    "chime",
    "repeat",
    "repeat_interval",
    "interrupt",
    "hermes_site_id",
    "session_id",
    "response_topic",
    "normalize",
    "seed",
    "cache",
)


def fingerprint(ann: Announcement, message_id: int | None) -> str:
    """What makes a message the same one again, whatever id the intake gave the announcement."""
    content = {name: getattr(ann, name, None) for name in _CONTENT_FIELDS}
    content["priority"] = ann.priority.label
    content["correlation_data"] = ann.correlation_data.hex() if ann.correlation_data else None
    content["message_id"] = message_id
    blob = json.dumps(content, sort_keys=True, ensure_ascii=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


class RecentIds:
    """The last `window` accepted ids and fingerprints; persisted when `path` is given."""

    def __init__(self, window: int = 1000, path: Path | None = None) -> None:
        self.window = window
        self.path = path
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._fingerprints: OrderedDict[str, str] = OrderedDict()
        self._lines = 0
        self._trouble: str | None = None
        if path is not None:
            self._load(path)

    def seen(self, ann_id: str) -> bool:
        return ann_id in self._ids

    def redelivered(self, ann: Announcement, message_id: int | None) -> str | None:
        """The id under which the same message was accepted before, if it was."""
        return self._fingerprints.get(fingerprint(ann, message_id))

    def add(
        self,
        ann_id: str,
        ann: Announcement | None = None,
        *,
        message_id: int | None = None,
        persist: bool = True,
    ) -> None:
        """Remember an accepted id (and the message of `ann`); written to the file before this returns."""
        print_ = fingerprint(ann, message_id) if ann is not None and message_id is not None else None
        self._remember(ann_id, print_)
        if self.path is not None and persist:
            self._append({"id": ann_id, "fp": print_})

    def _remember(self, ann_id: str, print_: str | None) -> None:
        self._ids[ann_id] = None
        self._ids.move_to_end(ann_id)
        while len(self._ids) > self.window:
            self._ids.popitem(last=False)
        if print_ is not None:
            self._fingerprints[print_] = ann_id
            self._fingerprints.move_to_end(print_)
            while len(self._fingerprints) > self.window:
                self._fingerprints.popitem(last=False)

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("cannot read the duplicate memory %s (%s); starting empty", path, exc.strerror)
            return
        for line in lines:
            try:
                entry = json.loads(line)
                ann_id, print_ = entry["id"], entry.get("fp")
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a crash mid-write
            if isinstance(ann_id, str) and (print_ is None or isinstance(print_, str)):
                self._remember(ann_id, print_)
        self._lines = len(lines)

    def _append(self, entry: dict) -> None:
        if self._lines >= 2 * self.window and self._rewrite():
            return  # the rewritten file already holds the entry just remembered
        data = (json.dumps(entry, ensure_ascii=True) + "\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:  # the spool itself is written; losing duplicate memory is not fatal
            if exc.strerror != self._trouble:  # said once, not once per announcement
                log.warning("cannot persist the duplicate memory %s: %s", self.path, exc.strerror)
            self._trouble = exc.strerror
            return
        self._trouble = None
        self._lines += 1

    def _rewrite(self) -> bool:
        by_id = {ann_id: print_ for print_, ann_id in self._fingerprints.items()}
        entries = [{"id": ann_id, "fp": by_id.get(ann_id)} for ann_id in self._ids]
        tmp = self.path.with_suffix(".jsonl.tmp")
        try:
            tmp.write_text("".join(json.dumps(e, ensure_ascii=True) + "\n" for e in entries))
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cannot compact the duplicate memory %s: %s", self.path, exc.strerror)
            return False
        self._lines = len(entries)
        return True
