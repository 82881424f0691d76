"""The watchdog ping is earned, not free-running.

Each supervised worker (MQTT intake, announcer, engine, audio, thermal) posts a heartbeat when it makes
progress, and WATCHDOG=1 goes out only while every registered worker has beaten within one watchdog
interval. A hung pipeline therefore stops the pings and systemd restarts the service. The pings come from a
thread of their own that needs nothing but the heartbeats.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from qwen3tts.appliance.systemd.notify import Notifier

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
        self._thread = threading.Thread(target=self.run, args=(self._stop,), name="watchdog", daemon=True)
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

    def run(self, stop: threading.Event) -> None:
        """Ping until `stop` is set (the daemon runs this under its supervisor)."""
        period = (self.notifier.watchdog_interval or 1.0) / 2
        while not stop.wait(period):
            self.check_once()
