"""systemd notify protocol: READY, STATUS, EXTEND_TIMEOUT_USEC, WATCHDOG and STOPPING datagrams.

The watchdog ping is earned, not free-running: each supervised worker (MQTT, engine, audio) posts a
heartbeat, and WATCHDOG=1 goes out only while every registered worker has beaten recently. A hung
pipeline therefore stops the pings and systemd restarts the service.
Off systemd (no NOTIFY_SOCKET) every call is a silent no-op.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping

import sdnotify

log = logging.getLogger(__name__)


class Heartbeats:
    """Last beat time per worker; thread-safe, clock injectable for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def register(self, name: str) -> None:
        self.beat(name)

    def beat(self, name: str) -> None:
        with self._lock:
            self._last[name] = self._clock()

    def stale(self, max_age: float) -> list[str]:
        """Workers whose last beat is older than `max_age` seconds."""
        now = self._clock()
        with self._lock:
            return sorted(name for name, last in self._last.items() if now - last > max_age)


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

    def status(self, text: str) -> None:
        self.send(f"STATUS={text}")

    def extend_timeout(self, seconds: float) -> None:
        """Ask systemd for more start-up time (a first NPU/GPU compile can take minutes)."""
        self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}")

    def stopping(self, status: str = "stopping") -> None:
        self.send("STOPPING=1", f"STATUS={status}")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")


class Watchdog:
    """Pings WATCHDOG=1 at half of WATCHDOG_USEC while all workers are fresh."""

    def __init__(self, notifier: Notifier, heartbeats: Heartbeats):
        self.notifier = notifier
        self.heartbeats = heartbeats
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned: tuple[str, ...] = ()

    def start(self) -> None:
        if self.notifier.watchdog_interval is None:
            return
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def check_once(self) -> bool:
        """Ping if every worker beat within one watchdog interval; returns whether it pinged."""
        interval = self.notifier.watchdog_interval or 0.0
        stale = tuple(self.heartbeats.stale(max_age=interval))
        if stale:
            if stale != self._warned:
                log.error("watchdog withheld: no heartbeat from %s", ", ".join(stale))
            self._warned = stale
            return False
        self._warned = ()
        self.notifier.watchdog()
        return True

    def _run(self) -> None:
        period = (self.notifier.watchdog_interval or 1.0) / 2
        while not self._stop.wait(period):
            self.check_once()


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
