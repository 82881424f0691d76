"""Give freed heap memory back to the system now and then: glibc's `malloc_trim(0)`.

glibc keeps what the daemon's threads free (text, PCM chunks, MQTT payloads, HTTP buffers) in its
arenas for reuse and returns little of it by itself: over a soak RSS rose by about 5 MB per 1000
requests and a 5000-message flood left it hundreds of MB high, although nothing was still referenced
(a `malloc_trim(0)` by hand brought a soaked daemon back below its starting RSS; docs/benchmarks.md).
So the status loop calls `maybe_trim` every second: the trim runs when the engine is idle and at least
IDLE_INTERVAL_S after the last one (it walks the heap and takes the arenas' locks: not between two
decode steps), or after BUSY_INTERVAL_S whatever runs. Without glibc (musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

IDLE_INTERVAL_S = 10.0
BUSY_INTERVAL_S = 60.0


def glibc_malloc_trim() -> Callable[[int], int] | None:
    """libc's malloc_trim, or None where the C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


class MemoryTrim:
    """Decides when to trim; `trim` is malloc_trim (a test gives a recorder)."""

    def __init__(self, trim: Callable[[int], int] | None = None, clock: Callable[[], float] = time.monotonic):
        self._trim = trim if trim is not None else glibc_malloc_trim()
        self._clock = clock
        self._last = clock()
        self.trims = 0
        """malloc_trim calls since start."""

    def maybe_trim(self, idle: bool) -> bool:
        """Trim if it is time (see the module docstring); True if it did."""
        if self._trim is None:
            return False
        waited = self._clock() - self._last
        if waited < (IDLE_INTERVAL_S if idle else BUSY_INTERVAL_S):
            return False
        self._trim(0)
        self._last = self._clock()
        self.trims += 1
        return True
