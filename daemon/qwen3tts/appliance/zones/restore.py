"""What a Snapcast zone must switch back: each group's stream before an announcement took it, on disk.

Written (fsynced, renamed into place) before the first group is switched to the announcement stream and
removed once every group is back, so a crash of the daemon mid-announcement leaves the record behind and
the next start switches the groups back (docs/operations.md). A group already in the record keeps its
first entry: the stream it had before us, not our own.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


class RestoreRecord:
    """{group id: stream to switch it back to} of one zone, kept in `<directory>/<zone>.json`."""

    def __init__(self, directory: Path, zone: str) -> None:
        self.path = Path(directory) / f"{zone}.json"

    def pending(self) -> dict[str, str]:
        """What is still to be switched back ({} when nothing is, or the record is unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("%s: unreadable, nothing to switch back from it (%s)", self.path, exc)
            return {}
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, dict):
            return {}
        return {str(k): v for k, v in groups.items() if isinstance(v, str)}

    def remember(self, groups: dict[str, str]) -> None:
        """Add groups about to be switched (their current stream); OSError when it cannot be written."""
        merged = {**groups, **self.pending()}  # what was recorded first wins: the stream before us
        self.path.parent.mkdir(parents=True, exist_ok=True)
        part = self.path.with_suffix(".json.part")
        with open(part, "w", encoding="utf-8") as out:
            json.dump({"groups": merged}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(part, self.path)

    def forget(self, groups: list[str]) -> None:
        """These groups are back; the record goes once none is left."""
        left = {k: v for k, v in self.pending().items() if k not in groups}
        if left:
            self.remember_only(left)
        else:
            self.path.unlink(missing_ok=True)

    def remember_only(self, groups: dict[str, str]) -> None:
        self.path.unlink(missing_ok=True)
        self.remember(groups)
