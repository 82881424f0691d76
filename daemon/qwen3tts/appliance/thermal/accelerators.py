"""The accelerators' telemetry in sysfs: Intel iGPU frequencies and throttle reasons (both the i915 and the
xe driver) and the NPU's busy time. The NPU has no temperature of its own; its heat shows up in the
package temperature (sensors.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qwen3tts.appliance.thermal.sysfs import attribute, numbered_dirs, read_int

THROTTLE_REASONS = ("pl1", "pl2", "pl4", "thermal", "prochot", "ratl", "vr_thermalert", "vr_tdc")


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
                **_throttle(
                    {n: attribute(gt, f"throttle_reason_{n}") for n in ("status", *THROTTLE_REASONS)}
                ),
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
                        {"status": attribute(throttle, "status")}
                        | {name: attribute(throttle, f"reason_{name}") for name in THROTTLE_REASONS}
                    ),
                )
            )
    return gts


def _throttle(files: dict[str, str]) -> dict:
    """Reason names whose flag file reads non-zero; `status` is the driver's any-reason summary bit."""
    reasons, known = [], False
    for reason, path in files.items():
        value = read_int(path)
        if value is None:
            continue
        known = True
        if value:
            reasons.append(reason)
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
