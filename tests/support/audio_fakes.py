"""Fakes for the audio pipeline: a sink that records every block, and a clock that only moves when told.

Shared by tests/unit/appliance/audio/, the announcer's and the service's tests that need an audio sink.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

RATE = 24000


class FakeClock:
    """time.monotonic / time.sleep stand-ins: sleep() advances the clock instead of waiting."""

    def __init__(self, start: float = 1000.0):
        self.now = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)


@dataclass
class Write:
    item_id: str | None
    samples: np.ndarray
    t_after: float
    """Clock time when write() returned."""


@dataclass
class FakeSink:
    """Records writes per announcement; `paced` sinks advance the fake clock by each block's duration.

    `underflow_on` lists write numbers (0-based, over the sink's life) that report an underflow;
    `on_write(sink, write)` runs inside write(), on the audio thread, after recording.
    """

    clock: FakeClock = field(default_factory=FakeClock)
    latency_s: float = 0.0
    paced: bool = False
    real_delay_s: float = 0.0
    """Real seconds each write blocks (lets other threads run while a paced sink 'plays')."""
    underflow_on: set[int] = field(default_factory=set)
    on_write: Callable[[FakeSink, Write], None] | None = None
    fail_begin: Exception | None = None
    name: str = "fake"
    writes: list[Write] = field(default_factory=list)
    events: list[tuple[str, str | None, float]] = field(default_factory=list)
    _item: str | None = None

    def begin(self, item_id: str) -> None:
        if self.fail_begin is not None:
            raise self.fail_begin
        self._item = item_id
        self.events.append(("begin", item_id, self.clock()))

    def write(self, block: np.ndarray) -> bool:
        if self.paced:
            self.clock.advance(len(block) / RATE)
        if self.real_delay_s:
            time.sleep(self.real_delay_s)
        record = Write(self._item, np.array(block, dtype=np.float32, copy=True), self.clock())
        self.writes.append(record)
        if self.on_write is not None:
            self.on_write(self, record)
        return len(self.writes) - 1 in self.underflow_on

    def latency(self) -> float:
        return self.latency_s

    def end(self, complete: bool = True) -> None:
        self.events.append(("end", self._item, self.clock()))
        self._item = None

    def recover(self) -> bool:
        return True

    def close(self) -> None:
        self.events.append(("close", None, self.clock()))

    def played(self, item_id: str | None = None) -> np.ndarray:
        """Everything written (for one announcement, if given), concatenated."""
        parts = [w.samples for w in self.writes if item_id is None or w.item_id == item_id]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
