"""The machine's side of the chain: OpenVINO and its devices, the device nodes the service user needs,
driver versions, free disk, thermal sensors. Roots are parameters so tests use fake trees."""

from __future__ import annotations

import grp
import os
import shutil
from pathlib import Path
from typing import Any

from qwen3tts.appliance.thermal.governor import ThermalGovernor
from qwen3tts.appliance.thermal.sensors import read_sensors
from qwen3tts.doctor.check import Check
from qwen3tts.settings import DeviceSettings, ThermalSettings

SERVICE_GROUPS = ("audio", "render", "video")
"""The unit's SupplementaryGroups=: the service user reaches a node through one of these or not at all."""
MIN_FREE_BYTES = 256 << 20  # below this the spool's fsync and the compile cache start failing
NODES = {"GPU": ("dri", "renderD*", "drm"), "NPU": ("accel", "accel*", "accel")}  # /dev glob, /sys class
FIXES = {
    "GPU": "install the Intel GPU compute runtime (intel-opencl-icd, libze-intel-gpu1) and make "
    "/dev/dri/renderD* group render, mode 0660",
    "NPU": "install the Intel NPU driver (intel_vpu module and its user-space driver) and make "
    "/dev/accel/accel* group render, mode 0660",
}


def openvino_check(core: Any) -> Check:
    import openvino as ov

    devices = ", ".join(core.available_devices) or "none"
    return Check("OpenVINO", True, f"{ov.get_version()}, devices {devices}")


def device_checks(core: Any, devices: DeviceSettings, dev_root: Path, sysfs_root: Path) -> list[Check]:
    """One check per accelerator the device plan asks for (GPU, NPU): plugin, nodes, access, driver."""
    prefs = {"talker": devices.talker, "codec": devices.codec}
    available = list(core.available_devices)
    checks = []
    for family in ("GPU", "NPU"):
        wanting = [name for name, pref in prefs.items() if any(_family(d) == family for d in pref)]
        if not wanting:
            continue
        needed = any(all(_family(d) != "CPU" for d in prefs[name]) for name in wanting)  # no CPU fallback
        checks.append(_device_check(core, family, available, dev_root, sysfs_root, needed))
    return checks


def _device_check(core, family: str, available: list[str], dev_root: Path, sysfs_root: Path, needed: bool):
    subdir, pattern, sys_class = NODES[family]
    nodes = sorted((dev_root / subdir).glob(pattern))
    plugin = [d for d in available if _family(d) == family]
    found = [f"OpenVINO {'lists ' + ', '.join(plugin) if plugin else 'has no ' + family}"]
    problems = [] if plugin else [f"OpenVINO does not list a {family}"]
    if not nodes:
        problems.append(f"no {dev_root / subdir / pattern}")
    for node in nodes:
        me, service, owner = node_access(node)
        driver = driver_of(node, sys_class, sysfs_root)
        found.append(f"{node} ({owner}, driver {driver}{', you: rw' if me else ', you: no access'})")
        if not service:
            problems.append(f"{node} is not rw for the service user (groups {', '.join(SERVICE_GROUPS)})")
    found += [f"{name} {value}" for name, value in driver_versions(core, plugin)]
    detail = "; ".join(problems) if problems else "; ".join(found)
    return Check(family, not problems, detail, "" if not problems else FIXES[family], needed)


def node_access(node: Path) -> tuple[bool, bool, str]:
    """(rw for the current user, rw for the service user via its groups or others, "group:mode")."""
    st = node.stat()
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    mode = st.st_mode & 0o777
    service = (mode & 0o006) == 0o006 or (group in SERVICE_GROUPS and (mode & 0o060) == 0o060)
    return os.access(node, os.R_OK | os.W_OK), service, f"{group} {mode:04o}"


def driver_of(node: Path, sys_class: str, sysfs_root: Path) -> str:
    """Kernel driver behind a device node (i915, xe, intel_vpu) and its module version when it has one."""
    link = sysfs_root / "class" / sys_class / node.name / "device" / "driver"
    try:
        name = Path(os.readlink(link)).name
    except OSError:
        return "unknown"
    version = sysfs_root / "module" / name / "version"
    return f"{name} {version.read_text().strip()}" if version.is_file() else name


def driver_versions(core: Any, devices: list[str]) -> list[tuple[str, str]]:
    """What the OpenVINO plugins report about their driver (GPU/NPU *DRIVER_VERSION properties)."""
    found = []
    for device in devices:
        try:
            names = [p for p in core.get_property(device, "SUPPORTED_PROPERTIES") if "DRIVER_VERSION" in p]
            found += [(f"{device} {name}", str(core.get_property(device, name))) for name in names]
        except Exception as exc:  # a plugin that cannot answer is itself worth showing
            found.append((f"{device} properties", f"unavailable ({str(exc).splitlines()[0][:60]})"))
    return found


def disk_check(name: str, path: Path, needed: bool) -> Check:
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(existing).free
    detail = f"{free / 2**30:.1f} GiB free for {path}"
    fix = f"free space on the file system of {existing} (at least {MIN_FREE_BYTES >> 20} MiB)"
    return Check(name, free >= MIN_FREE_BYTES, detail, fix, needed)


def thermal_check(thermal: ThermalSettings) -> Check:
    if not thermal.enabled:
        return Check("thermal sensors", True, "governor off (thermal.enabled: false)")
    decision = ThermalGovernor(thermal).update(read_sensors(thermal.sysfs_root), now=0.0)
    if decision.raw_temperature_c is None:
        return Check(
            "thermal sensors",
            False,
            f"no readable temperature under {thermal.sysfs_root} (zone types "
            f"{', '.join(thermal.zone_types)}); the governor cannot slow down when the chip runs hot",
            "load the coretemp module or set thermal.zone_types to a zone this machine has "
            "(`qwen3tts doctor --thermal` lists them)",
            needed=False,
        )
    detail = (
        f"{decision.raw_temperature_c:.1f} °C from {decision.temperature_source}, T_hot "
        f"{decision.t_hot_c:.1f} °C, batch {decision.batch}"
    )
    return Check("thermal sensors", True, detail)


def _family(name: str) -> str:
    return name.split(".", 1)[0].upper()
