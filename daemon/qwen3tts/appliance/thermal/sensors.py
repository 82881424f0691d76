"""Read-only sysfs telemetry for the thermal governor.

Every reader takes the sysfs root (`/sys` in production, a fake tree in tests) and never raises for a
sensor: a missing, unreadable, garbled or EIO-raising file (Wi-Fi zones do that while the radio is
down) is "unknown" (None) and the rest of the snapshot is still read. Temperatures are in °C.

Sources: thermal zones (type, temp, trip points) and hwmon `coretemp` here; the iGPU and NPU readings
in accelerators.py; the tolerant file access in sysfs.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.appliance.thermal.accelerators import GpuGt, NpuReading, read_gpus, read_npus
from qwen3tts.appliance.thermal.sysfs import attribute, numbered_dirs, read_attribute, read_millidegrees

_TEMP_INPUT = re.compile(r"temp(\d+)_input")


# ---- thermal zones ----


@dataclass(frozen=True)
class TripPoint:
    index: int
    type: str | None  # passive | active | hot | critical
    temp_c: float | None


@dataclass(frozen=True)
class ThermalZone:
    name: str  # thermal_zoneN
    type: str | None  # x86_pkg_temp, TCPU, acpitz, iwlwifi_1, ...
    temp_c: float | None
    trips: tuple[TripPoint, ...]

    def lowest_passive_trip_c(self) -> float | None:
        """The lowest enabled passive trip point. x86_pkg_temp's user trips read 0 until someone sets them."""
        passive = [t.temp_c for t in self.trips if t.type == "passive" and t.temp_c is not None]
        enabled = [temp for temp in passive if temp > 0]
        return min(enabled) if enabled else None


def read_thermal_zones(sysfs_root: Path) -> list[ThermalZone]:
    zones = []
    for zone_dir in numbered_dirs(sysfs_root / "class" / "thermal", "thermal_zone"):
        zones.append(
            ThermalZone(
                name=zone_dir.name,
                type=read_attribute(zone_dir / "type"),
                temp_c=read_millidegrees(zone_dir / "temp"),
                trips=_read_trips(zone_dir),
            )
        )
    return zones


def _read_trips(zone_dir: Path) -> tuple[TripPoint, ...]:
    pattern = re.compile(r"trip_point_(\d+)_temp")
    try:
        indices = sorted(int(m.group(1)) for e in zone_dir.iterdir() if (m := pattern.fullmatch(e.name)))
    except OSError:
        return ()
    return tuple(
        TripPoint(
            index=k,
            type=read_attribute(attribute(zone_dir, f"trip_point_{k}_type")),
            temp_c=read_millidegrees(attribute(zone_dir, f"trip_point_{k}_temp")),
        )
        for k in indices
    )


# ---- hwmon coretemp ----


@dataclass(frozen=True)
class HwmonTemp:
    chip: str  # hwmonN
    label: str  # "Package id 0", "Core 3", or tempK when unlabelled
    temp_c: float | None
    max_c: float | None
    crit_c: float | None

    @property
    def is_package(self) -> bool:
        return self.label.startswith("Package")


def read_coretemp(sysfs_root: Path) -> list[HwmonTemp]:
    temps = []
    for chip in numbered_dirs(sysfs_root / "class" / "hwmon", "hwmon"):
        if read_attribute(chip / "name") != "coretemp":
            continue
        try:
            indices = sorted(int(m.group(1)) for e in chip.iterdir() if (m := _TEMP_INPUT.fullmatch(e.name)))
        except OSError:
            continue
        for k in indices:
            temps.append(
                HwmonTemp(
                    chip=chip.name,
                    label=read_attribute(attribute(chip, f"temp{k}_label")) or f"temp{k}",
                    temp_c=read_millidegrees(attribute(chip, f"temp{k}_input")),
                    max_c=read_millidegrees(attribute(chip, f"temp{k}_max")),
                    crit_c=read_millidegrees(attribute(chip, f"temp{k}_crit")),
                )
            )
    return temps


# ---- one snapshot of everything ----


@dataclass(frozen=True)
class SensorSnapshot:
    zones: tuple[ThermalZone, ...] = ()
    coretemp: tuple[HwmonTemp, ...] = ()
    gpus: tuple[GpuGt, ...] = ()
    npus: tuple[NpuReading, ...] = ()

    def counted_zones(self, zone_types: Iterable[str]) -> list[ThermalZone]:
        wanted = set(zone_types)
        return [zone for zone in self.zones if zone.type in wanted]

    def temperature(self, zone_types: Iterable[str]) -> tuple[float | None, str]:
        """(hottest known temperature, where it came from): counted zones, else coretemp packages."""
        zones = [z for z in self.counted_zones(zone_types) if z.temp_c is not None]
        if zones:
            hottest = max(zones, key=lambda z: z.temp_c)
            return hottest.temp_c, f"{hottest.name} ({hottest.type})"
        packages = [t for t in self.coretemp if t.temp_c is not None and t.is_package]
        cores = packages or [t for t in self.coretemp if t.temp_c is not None]
        if cores:
            hottest = max(cores, key=lambda t: t.temp_c)
            return hottest.temp_c, f"{hottest.chip} coretemp {hottest.label}"
        return None, "no readable sensor"

    def lowest_passive_trip(self, zone_types: Iterable[str]) -> tuple[float | None, str]:
        trips = [(z.lowest_passive_trip_c(), z.name) for z in self.counted_zones(zone_types)]
        known = [(temp, name) for temp, name in trips if temp is not None]
        if not known:
            return None, ""
        return min(known)

    @property
    def gpu_throttle_reasons(self) -> tuple[str, ...]:
        """Set throttle reasons over all GTs, `card0/gt0:thermal` style, in reading order."""
        return tuple(f"{g.card}/{g.gt}:{reason}" for g in self.gpus for reason in g.throttle_reasons)


def read_sensors(sysfs_root: Path) -> SensorSnapshot:
    root = Path(sysfs_root)
    return SensorSnapshot(
        zones=tuple(read_thermal_zones(root)),
        coretemp=tuple(read_coretemp(root)),
        gpus=tuple(read_gpus(root)),
        npus=tuple(read_npus(root)),
    )
