"""Thermal governor: keep synthesis inside the thermal envelope by resizing the engine's batch.

The controller described in docs/architecture.md (thermal governor). Each sample, the hottest
counted sensor is smoothed with an EWMA and mapped onto discrete batch levels
(settings.thermal.batch_levels, cool to hot):
  - step DOWN one level at once, on every sample where the smoothed temperature is above T_hot or any
    GPU throttle reason is set (throttle bits are a leading indicator: the package is at its limit);
  - step UP one level only after the smoothed temperature has stayed at or below T_hot - hysteresis for
    dwell_s; the dwell restarts after every change, so steps up are always at least dwell_s apart and
    noise around T_hot cannot make the batch flap faster than that;
  - hold otherwise, including when no temperature can be read (unknown is not evidence of cool).
T_hot is the lowest enabled passive trip point of the counted zones minus trip_margin_c, else t_hot_c.
The governor only lowers the engine's live limit: emergency announcements bypass it in the scheduler
(engine/scheduler.py), so they are never deferred, and preempted requests finish later, never dropped.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from qwen3tts.appliance.thermal.sensors import SensorSnapshot, read_sensors
from qwen3tts.errors import ConfigError
from qwen3tts.settings import ThermalSettings

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
OnChange = Callable[[str, int, str], None]  # (level name, batch limit, reason)


class BatchLimited(Protocol):
    """What the governor needs of the engine."""

    def set_max_batch(self, n: int) -> None: ...


def level_names(num_levels: int) -> tuple[str, ...]:
    """cool, warm, hot for three levels; warm1, warm2, ... when there are more middle levels."""
    if num_levels == 1:
        return ("cool",)
    middle = num_levels - 2
    warm = ("warm",) if middle == 1 else tuple(f"warm{i}" for i in range(1, middle + 1))
    return ("cool", *warm, "hot")


@dataclass(frozen=True)
class ThermalDecision:
    """The governor's state after one sample, and why."""

    level: int  # index into batch_levels; 0 is the coolest
    level_name: str  # cool | warm | hot
    batch: int  # the engine's live batch limit at this level
    temperature_c: float | None  # smoothed (EWMA); None until a sensor was read
    raw_temperature_c: float | None  # this sample's hottest counted sensor
    temperature_source: str  # e.g. "thermal_zone0 (x86_pkg_temp)"
    t_hot_c: float
    t_hot_source: str  # "passive trip ... on thermal_zoneN minus margin" or "settings"
    throttle_reasons: tuple[str, ...]  # e.g. ("card0/gt0:thermal",)
    reason: str  # why the level changed, or why it holds
    changed: bool

    def notify_status(self) -> str:
        """The thermal part of systemd's STATUS= line."""
        return f"thermal={self.level_name}; batch={self.batch}"


class ThermalGovernor:
    """Pure controller: snapshot + time in, decision out. Not thread-safe; one sampler drives it."""

    def __init__(self, settings: ThermalSettings):
        levels = settings.batch_levels
        if not levels or any(not isinstance(n, int) or n < 1 for n in levels):
            raise ConfigError(f"thermal.batch_levels must be integers >= 1, got {levels!r}")
        if any(hot > cool for cool, hot in itertools.pairwise(levels)):
            raise ConfigError(f"thermal.batch_levels must not grow from cool to hot, got {levels!r}")
        self.settings = settings
        self.names = level_names(len(levels))
        self.level = 0
        self.smoothed_c: float | None = None
        self._cool_since: float | None = None

    @property
    def batch(self) -> int:
        return self.settings.batch_levels[self.level]

    def t_hot(self, snapshot: SensorSnapshot) -> tuple[float, str]:
        trip_c, zone = snapshot.lowest_passive_trip(self.settings.zone_types)
        if trip_c is None:
            return self.settings.t_hot_c, "settings"
        margin = self.settings.trip_margin_c
        return trip_c - margin, f"passive trip {trip_c:.1f} °C on {zone} minus {margin:.1f} °C"

    def update(self, snapshot: SensorSnapshot, now: float) -> ThermalDecision:
        raw_c, source = snapshot.temperature(self.settings.zone_types)
        if raw_c is not None:
            alpha = self.settings.ewma_alpha
            previous = raw_c if self.smoothed_c is None else self.smoothed_c
            self.smoothed_c = alpha * raw_c + (1 - alpha) * previous
        t_hot_c, t_hot_source = self.t_hot(snapshot)
        throttled = snapshot.gpu_throttle_reasons
        before = self.level
        # A stale EWMA is not evidence either way: without a reading only throttle bits may act.
        reason = self._step(self.smoothed_c if raw_c is not None else None, t_hot_c, throttled, now)
        return ThermalDecision(
            level=self.level,
            level_name=self.names[self.level],
            batch=self.batch,
            temperature_c=self.smoothed_c,
            raw_temperature_c=raw_c,
            temperature_source=source,
            t_hot_c=t_hot_c,
            t_hot_source=t_hot_source,
            throttle_reasons=throttled,
            reason=reason,
            changed=self.level != before,
        )

    def _step(self, temp: float | None, t_hot_c: float, throttled: tuple[str, ...], now: float) -> str:
        """Move at most one level; returns the reason for the move, or for holding."""
        too_hot = temp is not None and temp > t_hot_c
        if too_hot or throttled:
            self._cool_since = None
            why = (f"temperature {temp:.1f} °C above T_hot {t_hot_c:.1f} °C" if too_hot
                   else f"GPU throttling ({', '.join(throttled)})")  # fmt: skip
            if self.level == len(self.names) - 1:
                return f"{why}; already at the lowest batch"
            self.level += 1
            return why
        threshold = t_hot_c - self.settings.hysteresis_c
        if temp is None or temp > threshold:
            self._cool_since = None
            if temp is None:
                return "no temperature reading"
            return f"{temp:.1f} °C, between {threshold:.1f} °C and T_hot"
        if self.level == 0:
            return f"{temp:.1f} °C, cool"
        if self._cool_since is None:
            self._cool_since = now
        cool_for = now - self._cool_since
        if cool_for < self.settings.dwell_s:
            dwell = self.settings.dwell_s
            return f"{temp:.1f} °C, at or below {threshold:.1f} °C for {cool_for:.0f} of {dwell:.0f} s"
        self.level -= 1
        self._cool_since = now  # the next step up needs a whole dwell of its own
        return f"{temp:.1f} °C, at or below {threshold:.1f} °C for {cool_for:.0f} s"


class ThermalMonitor:
    """The supervised thermal thread: sample sysfs, update the governor, apply and announce the batch.

    `sample_once()` is the whole cycle (tests call it with a fake clock). The engine's limit is set on
    the first sample and on every change; if applying or announcing fails, the next sample retries.
    """

    def __init__(
        self,
        settings: ThermalSettings,
        engine: BatchLimited,
        on_change: OnChange | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        read: Callable[[Path], SensorSnapshot] = read_sensors,
        heartbeat: Callable[[], None] | None = None,
    ):
        self.settings = settings
        self.governor = ThermalGovernor(settings)
        self._engine = engine
        self._on_change = on_change
        self._clock = clock
        self._read = read
        self._heartbeat = heartbeat
        self._applied: tuple[int, str] | None = None  # (batch, level name) the engine and status have
        self._had_temperature: bool | None = None
        self._decision: ThermalDecision | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def decision(self) -> ThermalDecision | None:
        """The latest decision (None before the first sample)."""
        return self._decision

    def sample_once(self) -> ThermalDecision:
        snapshot = self._read(self.settings.sysfs_root)
        decision = self.governor.update(snapshot, self._clock())
        self._decision = decision
        self._log_sensor_presence(decision)
        if (decision.batch, decision.level_name) != self._applied:
            self._apply(decision)
        if self._heartbeat is not None:
            self._heartbeat()
        return decision

    def _apply(self, decision: ThermalDecision) -> None:
        first = self._applied is None
        if first:
            log.info("thermal level %s, batch %d (T_hot %.1f °C from %s)", decision.level_name,
                     decision.batch, decision.t_hot_c, decision.t_hot_source)  # fmt: skip
        else:
            log.warning("thermal level %s -> %s, batch %d: %s", self._applied[1], decision.level_name,
                        decision.batch, decision.reason)  # fmt: skip
        self._engine.set_max_batch(decision.batch)
        if self._on_change is not None:
            self._on_change(decision.level_name, decision.batch, "start" if first else decision.reason)
        self._applied = (decision.batch, decision.level_name)

    def _log_sensor_presence(self, decision: ThermalDecision) -> None:
        has_temperature = decision.raw_temperature_c is not None
        if has_temperature == self._had_temperature:
            return
        if has_temperature:
            log.info("thermal: reading %s", decision.temperature_source)
        else:
            zone_types = ", ".join(self.settings.zone_types)
            log.warning("thermal: no readable temperature under %s (zone types %s); holding batch %d",
                        self.settings.sysfs_root, zone_types, decision.batch)  # fmt: skip
        self._had_temperature = has_temperature

    # ---- the thread ----

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("thermal monitor already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, args=(self._stop,), name="qwen3tts-thermal",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run(self, stop: threading.Event) -> None:
        """Sample until `stop` is set (the daemon runs this under its supervisor; `start` for tests)."""
        failures = 0
        while not stop.is_set():
            try:
                self.sample_once()
                failures = 0
                delay = self.settings.interval_s
            except Exception:  # supervisor boundary: a bad sample must not end thermal protection
                failures += 1
                delay = min(self.settings.interval_s * 2**failures, MAX_BACKOFF_S)
                log.exception("thermal sample failed (%d in a row); retrying in %.1f s", failures, delay)
            if stop.wait(delay):
                return
