"""Read-only sysfs telemetry for the thermal governor.

Every reader takes the sysfs root (`/sys` in production, a fake tree in tests) and never raises for a
sensor: a missing, unreadable, garbled or EIO-raising file (Wi-Fi zones do that while the radio is
down) is "unknown" (None) and the rest of the snapshot is still read. Temperatures are in °C.

Sources: thermal zones (type, temp, trip points), hwmon `coretemp`, Intel iGPU frequency and throttle
reasons for both the i915 and the xe driver, and the NPU's busy time. The NPU has no temperature of
its own; its heat shows up in the package temperature.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MAX_ATTRIBUTE_BYTES = 4096  # a sysfs attribute is at most one page
_TEMP_INPUT = re.compile(r"temp(\d+)_input")
THROTTLE_REASONS = ("pl1", "pl2", "pl4", "thermal", "prochot", "ratl", "vr_thermalert", "vr_tdc")


# ---- tolerant file access ----


def read_text(path: Path) -> str | None:
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


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text else None
    except ValueError:
        log.debug("%s holds %r, not an integer", path, text)
        return None


def read_millidegrees(path: Path) -> float | None:
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
                type=read_text(zone_dir / "type"),
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
            type=read_text(zone_dir / f"trip_point_{k}_type"),
            temp_c=read_millidegrees(zone_dir / f"trip_point_{k}_temp"),
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
        if read_text(chip / "name") != "coretemp":
            continue
        try:
            indices = sorted(int(m.group(1)) for e in chip.iterdir() if (m := _TEMP_INPUT.fullmatch(e.name)))
        except OSError:
            continue
        for k in indices:
            temps.append(
                HwmonTemp(
                    chip=chip.name,
                    label=read_text(chip / f"temp{k}_label") or f"temp{k}",
                    temp_c=read_millidegrees(chip / f"temp{k}_input"),
                    max_c=read_millidegrees(chip / f"temp{k}_max"),
                    crit_c=read_millidegrees(chip / f"temp{k}_crit"),
                )
            )
    return temps


# ---- Intel iGPU: i915 and xe ----


@dataclass(frozen=True)
class GpuGt:
    """One graphics tile/GT: its frequencies and which throttle reasons are set right now."""

    card: str  # cardN
    driver: str  # i915 | xe
    gt: str  # gt0, tile0/gt0, or "legacy" for i915's card-level files
    act_freq_mhz: int | None
    max_freq_mhz: int | None
    throttle_reasons: tuple[str, ...]  # set reasons, e.g. ("thermal", "pl1")
    throttle_known: bool  # False when no throttle file could be read


def read_gpus(sysfs_root: Path) -> list[GpuGt]:
    gts = []
    for card in numbered_dirs(sysfs_root / "class" / "drm", "card"):
        gts.extend(_read_i915(card))
        gts.extend(_read_xe(card))
    return gts


def _read_i915(card: Path) -> list[GpuGt]:
    gt_dirs = numbered_dirs(card / "gt", "gt")
    if gt_dirs:
        return [
            GpuGt(
                card=card.name,
                driver="i915",
                gt=gt.name,
                act_freq_mhz=read_int(gt / "rps_act_freq_mhz"),
                max_freq_mhz=read_int(gt / "rps_max_freq_mhz"),
                **_throttle(gt / f"throttle_reason_{name}" for name in ("status", *THROTTLE_REASONS)),
            )
            for gt in gt_dirs
        ]
    if (card / "gt_act_freq_mhz").exists():  # kernels before per-GT sysfs: no throttle reasons
        return [
            GpuGt(card.name, "i915", "legacy", read_int(card / "gt_act_freq_mhz"),
                  read_int(card / "gt_RP0_freq_mhz"), (), False)
        ]  # fmt: skip
    return []


def _read_xe(card: Path) -> list[GpuGt]:
    gts = []
    for tile in numbered_dirs(card / "device", "tile"):
        for gt in numbered_dirs(tile, "gt"):
            freq = gt / "freq0"
            if not freq.is_dir():
                continue
            throttle = freq / "throttle"
            gts.append(
                GpuGt(
                    card=card.name,
                    driver="xe",
                    gt=f"{tile.name}/{gt.name}",
                    act_freq_mhz=read_int(freq / "act_freq"),
                    max_freq_mhz=read_int(freq / "max_freq"),
                    **_throttle(
                        [throttle / "status", *(throttle / f"reason_{name}" for name in THROTTLE_REASONS)]
                    ),
                )
            )
    return gts


def _throttle(files: Iterable[Path]) -> dict:
    """Reason names whose flag file reads non-zero; `status` is the driver's any-reason summary bit."""
    reasons, known = [], False
    for path in files:
        value = read_int(path)
        if value is None:
            continue
        known = True
        if value:
            reasons.append(path.name.removeprefix("throttle_reason_").removeprefix("reason_"))
    return {"throttle_reasons": tuple(reasons), "throttle_known": known}


# ---- NPU ----


@dataclass(frozen=True)
class NpuReading:
    name: str  # accelN
    busy_time_us: int | None  # cumulative; the kernel asks for reads no more often than ~1 Hz
    freq_mhz: int | None  # 0 while idle


def read_npus(sysfs_root: Path) -> list[NpuReading]:
    npus = []
    for accel in numbered_dirs(sysfs_root / "class" / "accel", "accel"):
        device = accel / "device"
        npus.append(
            NpuReading(
                name=accel.name,
                busy_time_us=read_int(device / "npu_busy_time_us"),
                freq_mhz=read_int(device / "npu_current_frequency_mhz"),
            )
        )
    return npus


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
