"""Ducking: while an announcement plays in a zone, the zone's other audio is lowered, and raised after it.

The zone's audio thread calls `duck(id)` before the chime and returns once the ramp in is over, so the
chime starts on lowered music; it calls `unduck(id)` after the last sample was heard, in a `finally`, so a
barge-in, a cancel or a failed output raise it too. The ramps are driven here, in steps of `STEP_S`, the
same for every backend. When the next track is already waiting as one ends (a barge-in), the zone stays
lowered and the next track's duck takes over without ramps (`hand_over`), so an emergency is not kept
waiting for the music to swell and fall again. The backends: an MQTT message (mqtt.py; the listener
ramps itself, the message says how long), the volume of Snapcast clients (snapcast.py), an ALSA
mixer control (alsa.py).

Each backend writes what it lowers into a restore record (zones/restore.py) before it lowers anything,
and forgets it once it is back, so a crash of ours leaves the record behind and `recover()` (the audio
thread calls it while idle, at the latest right after start) raises what was left lowered.

A backend that fails is logged once (until it works again) and left out for the rest of that
announcement; a failing backend never delays or stops the announcement beyond its own timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from qwen3tts.appliance.systemd.supervisor import isolated
from qwen3tts.errors import AudioError
from qwen3tts.settings import DuckingSettings

log = logging.getLogger(__name__)

STEP_S = 0.05
"""Length of one ramp step, in seconds: 20 volume changes a second are smooth to the ear."""
RECOVER_EVERY_S = 5.0
"""How often an idle zone tries again to raise what is still recorded as lowered (a backend that was
unreachable): each attempt may block the audio thread for a backend's timeout."""


class DuckError(AudioError):
    """A ducking backend could not lower or raise (broker gone, snapserver down, no mixer control)."""


class DuckBackend(Protocol):
    """One way of lowering a zone's other audio; every method raises DuckError (or OSError) on failure."""

    name: str
    """For logs, e.g. 'mqtt:home/kitchen/duck'."""

    def lower(self, announcement: str, level_db: float, ramp_ms: int) -> None:
        """Start of a duck: record what to restore (before changing anything), say that it starts."""

    def step(self, db: float) -> None:
        """Be `db` (0 or less) below what it was before `lower`: one step of a ramp."""

    def raise_back(self, announcement: str, ramp_ms: int) -> None:
        """Start of the ramp back up (the MQTT backend sends `unduck` here)."""

    def hand_over(self, previous: str, announcement: str, level_db: float) -> None:
        """Stay lowered, now for `announcement` (MQTT: `unduck` previous, `duck` this one, no ramps)."""

    def restored(self) -> None:
        """Exactly what it was before `lower`; the record goes."""

    def recover(self) -> bool:
        """Raise what a record left lowered (a crash of ours); True when nothing is left to raise."""


def ramp_steps(level_db: float, ramp_ms: int) -> list[float]:
    """The levels (dB) of a ramp from 0 down to `level_db`, one per `STEP_S`; the last is `level_db`."""
    count = max(1, round(ramp_ms / 1000 / STEP_S))
    return [level_db * k / count for k in range(1, count + 1)]


class ZoneDucking:
    """The ducking of one zone: its backends, its ramps, its failure reports."""

    def __init__(
        self,
        zone: str,
        settings: DuckingSettings,
        backends: Sequence[DuckBackend],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.zone = zone
        self.settings = settings
        self.backends = list(backends)
        self._sleep, self._clock = sleep, clock
        self._next_recover = 0.0
        self._lowered: list[DuckBackend] = []
        self._failing: set[str] = set()
        self._unrecovered = list(backends)
        self._held: str | None = None

    def duck(self, announcement: str) -> None:
        """Lower every backend over the ramp in; returns when the ramp is over (the chime may start)."""
        if self._held is not None:
            self._take_over(self._held, announcement)
            return
        self.unduck(announcement)  # nothing stays lowered twice (a duck without its unduck)
        level, ramp_ms = self.settings.level_db, self.settings.ramp_in_ms
        self._lowered = [
            b for b in self.backends if self._try(b, "lower", b.lower, announcement, level, ramp_ms)
        ]
        if self._lowered:
            self._ramp(ramp_steps(level, ramp_ms), self.settings.ramp_in_ms)
            log.info("%s: zone %s ducked by %.1f dB (%s)", announcement, self.zone, level,
                     ", ".join(b.name for b in self._lowered))  # fmt: skip

    def unduck(self, announcement: str, hold: bool = False) -> None:
        """Raise what `duck` lowered over the ramp out; what fails stays recorded for `recover()`.
        `hold`: stay lowered for the next track, which is already waiting."""
        lowered, ramp_ms = self._lowered, self.settings.ramp_out_ms
        if not lowered:
            return
        if hold:
            self._held = announcement
            return
        self._held = None
        for backend in lowered:
            self._try(backend, "raise", backend.raise_back, announcement, ramp_ms)
        up = [self.settings.level_db - level for level in ramp_steps(self.settings.level_db, ramp_ms)]
        self._ramp(up, ramp_ms)
        back = [b for b in lowered if self._try(b, "restore", b.restored)]
        self._lowered = []
        self._unrecovered += [b for b in lowered if b not in back and b not in self._unrecovered]
        if back:
            log.info("%s: zone %s unducked (%s)", announcement, self.zone, ", ".join(b.name for b in back))

    def recover(self) -> None:
        """Raise what a crash of ours left lowered; cheap once every backend is clear."""
        if self._held is not None:  # held for a track that never came: raise it now
            held, self._held = self._held, None
            self.unduck(held)
        if self._lowered or not self._unrecovered or self._clock() < self._next_recover:
            return
        self._next_recover = self._clock() + RECOVER_EVERY_S
        self._unrecovered = [
            b for b in self._unrecovered if not self._try(b, "recover", b.recover, quiet=True)
        ]

    # ---- helpers ----

    def _take_over(self, previous: str, announcement: str) -> None:
        self._held = None
        level, lowered = self.settings.level_db, self._lowered
        self._lowered = [
            b for b in lowered if self._try(b, "hand over", b.hand_over, previous, announcement, level)
        ]
        self._unrecovered += [b for b in lowered if b not in self._lowered and b not in self._unrecovered]
        log.info("%s: zone %s stays ducked after %s", announcement, self.zone, previous)

    def _ramp(self, levels: list[float], ramp_ms: int) -> None:
        pause = ramp_ms / 1000 / len(levels)
        stepping = list(self._lowered)
        for level in levels:
            stepping = [b for b in stepping if self._try(b, "step", b.step, level)]
            if pause:
                self._sleep(pause)

    def _try(self, backend: DuckBackend, what: str, call, *args, quiet: bool = False) -> bool:
        """True when `call` worked; a failure is logged once per backend until it works again."""
        ok = False
        with self._boundary(backend, what):
            try:
                result = call(*args)
                ok = result is not False
            except (DuckError, OSError) as exc:
                self._failed(backend, what, exc)
                return False
        if ok and backend.name in self._failing and not quiet:
            self._failing.discard(backend.name)
            log.info("zone %s: ducking on %s works again", self.zone, backend.name)
        return ok

    @contextmanager
    def _boundary(self, backend: DuckBackend, what: str) -> Iterator[None]:
        # anything unexpected in a backend is that backend's failure, never the announcement's
        with isolated(f"zone {self.zone}: ducking on {backend.name} ({what})", lambda exc: None):
            yield

    def _failed(self, backend: DuckBackend, what: str, exc: BaseException) -> None:
        if backend.name in self._failing:
            log.debug("zone %s: ducking on %s failed again (%s): %s", self.zone, backend.name, what, exc)
            return
        self._failing.add(backend.name)
        log.warning("zone %s: ducking on %s failed (%s), the announcement plays on: %s",
                    self.zone, backend.name, what, exc)  # fmt: skip
