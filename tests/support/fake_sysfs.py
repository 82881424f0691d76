"""A fake sysfs tree for thermal tests: thermal zones, hwmon coretemp, i915/xe GPU files, the NPU.

Files are real files under a temporary directory, laid out like the kernel's,
so the readers run unchanged. A file can also be made to fail like sysfs does (EIO, ENODATA, EACCES):
`fail(path, errno)` records it and `install(monkeypatch)` routes the readers' open() through a stub
that raises for those paths; tests run as root here, so chmod could not make a file unreadable.
"""

from __future__ import annotations

import builtins
import errno as errnos
import os
from collections.abc import Iterable
from pathlib import Path

from qwen3tts.appliance.thermal import sysfs as thermal_sysfs
from qwen3tts.appliance.thermal.accelerators import THROTTLE_REASONS


def _milli(celsius: float) -> str:
    return str(round(celsius * 1000))


class FakeSysfs:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.failing: dict[Path, int] = {}

    def write(self, relative: str, value: object) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{value}\n")
        return path

    # ---- thermal zones ----

    def zone(self, n: int, type_: str, temp_c: float, trips: Iterable[tuple[str, float]] = ()) -> Path:
        base = f"class/thermal/thermal_zone{n}"
        self.write(f"{base}/type", type_)
        self.write(f"{base}/temp", _milli(temp_c))
        self.write(f"{base}/mode", "enabled")
        for k, (trip_type, trip_c) in enumerate(trips):
            self.write(f"{base}/trip_point_{k}_type", trip_type)
            self.write(f"{base}/trip_point_{k}_temp", _milli(trip_c))
        return self.root / base

    def set_zone_temp(self, n: int, temp_c: float) -> None:
        self.write(f"class/thermal/thermal_zone{n}/temp", _milli(temp_c))

    # ---- hwmon ----

    def coretemp(self, n: int, temps: dict[str, float], max_c: float = 100.0, crit_c: float = 100.0) -> Path:
        base = f"class/hwmon/hwmon{n}"
        self.write(f"{base}/name", "coretemp")
        for k, (label, temp_c) in enumerate(temps.items(), start=1):
            self.write(f"{base}/temp{k}_label", label)
            self.write(f"{base}/temp{k}_input", _milli(temp_c))
            self.write(f"{base}/temp{k}_max", _milli(max_c))
            self.write(f"{base}/temp{k}_crit", _milli(crit_c))
        return self.root / base

    def other_hwmon(self, n: int, name: str, temp_c: float) -> None:
        self.write(f"class/hwmon/hwmon{n}/name", name)
        self.write(f"class/hwmon/hwmon{n}/temp1_input", _milli(temp_c))

    # ---- GPU ----

    def i915(self, card: int = 0, gt: int = 0, act_mhz: int = 300, max_mhz: int = 1300,
             throttle: Iterable[str] = ()) -> Path:  # fmt: skip
        base = f"class/drm/card{card}/gt/gt{gt}"
        self.write(f"{base}/rps_act_freq_mhz", act_mhz)
        self.write(f"{base}/rps_max_freq_mhz", max_mhz)
        self.set_i915_throttle(card, gt, throttle)
        self.write(f"class/drm/card{card}-eDP-1/status", "connected")  # a connector, not a card
        return self.root / base

    def set_i915_throttle(self, card: int, gt: int, reasons: Iterable[str]) -> None:
        reasons = set(reasons)
        base = f"class/drm/card{card}/gt/gt{gt}"
        self.write(f"{base}/throttle_reason_status", int(bool(reasons)))
        for name in THROTTLE_REASONS:
            self.write(f"{base}/throttle_reason_{name}", int(name in reasons))

    def i915_legacy(self, card: int = 0, act_mhz: int = 300, rp0_mhz: int = 1100) -> None:
        self.write(f"class/drm/card{card}/gt_act_freq_mhz", act_mhz)
        self.write(f"class/drm/card{card}/gt_RP0_freq_mhz", rp0_mhz)

    def xe(self, card: int = 0, tile: int = 0, gt: int = 0, act_mhz: int = 400, max_mhz: int = 2000,
           throttle: Iterable[str] = ()) -> Path:  # fmt: skip
        base = f"class/drm/card{card}/device/tile{tile}/gt{gt}/freq0"
        self.write(f"{base}/act_freq", act_mhz)
        self.write(f"{base}/max_freq", max_mhz)
        self.set_xe_throttle(card, tile, gt, throttle)
        return self.root / base

    def set_xe_throttle(self, card: int, tile: int, gt: int, reasons: Iterable[str]) -> None:
        reasons = set(reasons)
        base = f"class/drm/card{card}/device/tile{tile}/gt{gt}/freq0/throttle"
        self.write(f"{base}/status", int(bool(reasons)))
        for name in THROTTLE_REASONS:
            self.write(f"{base}/reason_{name}", int(name in reasons))

    # ---- NPU ----

    def npu(self, n: int = 0, busy_us: int = 0, freq_mhz: int = 0) -> None:
        self.write(f"class/accel/accel{n}/device/npu_busy_time_us", busy_us)
        self.write(f"class/accel/accel{n}/device/npu_current_frequency_mhz", freq_mhz)

    # ---- failures ----

    def fail(self, relative: str, error: int = errnos.EIO) -> Path:
        """Make reading this (existing or missing) file raise OSError(error) once install()ed."""
        path = self.root / relative
        self.failing[path] = error
        return path

    def install(self, monkeypatch) -> None:
        """Route the readers' open() through a stub that raises for the failing paths."""

        def stub_open(path, *args, **kwargs):
            error = self.failing.get(Path(path))
            if error is not None:
                raise OSError(error, os.strerror(error), str(path))
            return builtins.open(path, *args, **kwargs)

        monkeypatch.setattr(thermal_sysfs, "open", stub_open, raising=False)


def laptop(root: Path, package_c: float = 50.0) -> FakeSysfs:
    """A typical Intel laptop: package zone with a passive trip at 90 °C, acpitz, a Wi-Fi zone, coretemp,
    an i915 iGPU and an NPU."""
    fake = FakeSysfs(root)
    fake.zone(0, "acpitz", 40.0, trips=[("critical", 110.0)])
    fake.zone(1, "x86_pkg_temp", package_c, trips=[("passive", 0.0), ("passive", 90.0)])
    fake.zone(2, "iwlwifi_1", 35.0)
    fake.coretemp(3, {"Package id 0": package_c, "Core 0": package_c - 2})
    fake.i915(card=1)
    fake.npu(0, busy_us=123456, freq_mhz=0)
    return fake
