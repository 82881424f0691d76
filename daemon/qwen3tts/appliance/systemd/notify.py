"""systemd notify protocol: READY, RELOADING, STATUS, EXTEND_TIMEOUT_USEC, WATCHDOG and STOPPING datagrams.

Off systemd (no NOTIFY_SOCKET) every call is a silent no-op. When WATCHDOG=1 is sent is watchdog.py's.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping

import sdnotify

log = logging.getLogger(__name__)


class Notifier:
    """Sends sd_notify datagrams to $NOTIFY_SOCKET (systemd's protocol, not configuration)."""

    def __init__(self, environ: Mapping[str, str] | None = None):
        environ = os.environ if environ is None else environ
        self.enabled = bool(environ.get("NOTIFY_SOCKET"))
        self._notifier = sdnotify.SystemdNotifier() if self.enabled else None
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        for_us = not pid or pid == str(os.getpid())
        self.watchdog_interval = int(usec) / 1e6 if usec.isdigit() and int(usec) > 0 and for_us else None

    def send(self, *lines: str) -> None:
        if self._notifier is not None:
            self._notifier.notify("\n".join(lines))

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def reloading(self, status: str = "reloading the configuration") -> None:
        """Tell systemd a reload began (`systemctl reload` waits for the READY=1 that ends it)."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.send("RELOADING=1", f"MONOTONIC_USEC={usec}", f"STATUS={status}")

    def status(self, text: str) -> None:
        self.send(f"STATUS={text}")

    def extend_timeout(self, seconds: float) -> None:
        """Ask systemd for more start-up time (a first NPU/GPU compile can take minutes)."""
        self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}")

    def stopping(self, status: str = "stopping") -> None:
        self.send("STOPPING=1", f"STATUS={status}")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")


class ExtendStartTimeout:
    """Keeps asking systemd for 30 s more while a long first compile runs (EXTEND_TIMEOUT_USEC)."""

    def __init__(self, notifier: Notifier, every_s: float = 10.0, extend_s: float = 30.0):
        self.notifier, self.every_s, self.extend_s = notifier, every_s, extend_s
        self._done = threading.Event()

    def __enter__(self):
        self.notifier.extend_timeout(self.extend_s)
        threading.Thread(target=self._run, name="extend-timeout", daemon=True).start()
        return self

    def _run(self) -> None:
        while not self._done.wait(self.every_s):
            self.notifier.extend_timeout(self.extend_s)

    def __exit__(self, *exc) -> bool:
        self._done.set()
        return False
