"""One logging set-up for every command: a terminal gets timestamps, journald gets priorities.

Under systemd, stderr is a journal stream ($JOURNAL_STREAM names its device and inode). journald
reads a `<N>` prefix on each line as the syslog priority (SyslogLevelPrefix=, on by default), so
`journalctl -u qwen3tts -p warning` shows exactly our warnings and errors; it stamps the time itself.
The prefix needs no extra package (systemd's Python binding is not in the venv). Every line of a
multi-line record (a traceback) carries the prefix, so no continuation line drops to `info`.

Libraries that install their own handler when imported (nncf prints INFO tables to stdout) are
routed through ours by `quiet_libraries()`, called after such an import (importing nncf up front
would cost every command a second and a half).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TextIO

# logging level -> syslog priority (sd-daemon(3): <3> err, <4> warning, <6> info, <7> debug)
PRIORITIES = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6, logging.DEBUG: 7}
TERMINAL_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JOURNAL_FORMAT = "%(name)s: %(message)s"
QUIET_LIBRARIES = ("nncf",)  # INFO tables on every build; their warnings still come through


def priority(levelno: int) -> int:
    """Syslog priority of a logging level; levels between the named ones round towards the urgent."""
    for level, prio in sorted(PRIORITIES.items(), reverse=True):
        if levelno >= level:
            return prio
    return 7


class JournalFormatter(logging.Formatter):
    """`<N>name: message`, the prefix on every line; no timestamp (the journal has its own)."""

    def __init__(self) -> None:
        super().__init__(JOURNAL_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines())


def stderr_is_journal(environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> bool:
    """True when `stream` (stderr) is the journal stream systemd connected ($JOURNAL_STREAM=dev:inode)."""
    environ = os.environ if environ is None else environ
    value = environ.get("JOURNAL_STREAM", "")
    device, _, inode = value.partition(":")
    if not (device.isdigit() and inode.isdigit()):
        return False
    try:
        stat = os.fstat((stream or sys.stderr).fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (stat.st_dev, stat.st_ino) == (int(device), int(inode))


def setup_logging(
    level: int | str = logging.INFO,
    environ: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Replace the root handlers with one stderr handler (journal or terminal format); returns it."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    if stderr_is_journal(environ, stream):
        handler.setFormatter(JournalFormatter())
    else:
        handler.setFormatter(logging.Formatter(TERMINAL_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    quiet_libraries()
    return handler


def stderr_line(text: str, level: int = logging.ERROR) -> str:
    """A message printed to stderr outside logging (a command's final error), prefixed for the journal."""
    return f"<{priority(level)}>{text}" if stderr_is_journal() else text


def set_level(level: int | str) -> None:
    logging.getLogger().setLevel(level)


def quiet_libraries() -> None:
    """Each imported chatty library logs through our handler, at WARNING: one line per event, our format."""
    for name in QUIET_LIBRARIES:
        if name not in sys.modules:
            continue
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.propagate = True
        logger.setLevel(logging.WARNING)
