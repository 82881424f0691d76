"""Tolerant reads of sysfs attributes: a missing, unreadable, garbled or EIO-raising file is "unknown"
(None), never an exception (Wi-Fi zones raise EIO while the radio is down). Shared by the thermal readers.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)

MAX_ATTRIBUTE_BYTES = 4096  # a sysfs attribute is at most one page


def attribute(directory: Path, name: str) -> str:
    """`directory/name` as a str. The readers run every few seconds; a `Path` would intern each name
    made here (`temp3_input`, `throttle_reason_pl1`) anew each time, and that churn makes CPython
    rebuild its 3.7 MB interned-strings table now and then (docs/operations.md, "Memory")."""
    return os.path.join(directory, name)


def read_attribute(path: str | Path) -> str | None:
    """The stripped contents of one sysfs attribute, or None when it cannot be read for any reason."""
    try:
        with open(path, "rb") as attribute:
            raw = attribute.read(MAX_ATTRIBUTE_BYTES)
    except OSError as exc:  # missing, EACCES, EIO, ENODATA, EAGAIN, a directory: all mean "unknown"
        log.debug("cannot read %s: %s", path, exc)
        return None
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        log.debug("%s does not hold text", path)
        return None


def read_int(path: str | Path) -> int | None:
    text = read_attribute(path)
    try:
        return int(text) if text else None
    except ValueError:
        log.debug("%s holds %r, not an integer", path, text)
        return None


def read_millidegrees(path: str | Path) -> float | None:
    value = read_int(path)
    return None if value is None else value / 1000.0


def numbered_dirs(parent: Path, prefix: str) -> list[Path]:
    """`parent/<prefix>N` entries in numeric order (thermal_zone2 before thermal_zone10)."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    found = [(int(m.group(1)), entry) for entry in entries if (m := pattern.fullmatch(entry.name))]
    return [entry for _, entry in sorted(found)]
