"""`qwen3tts doctor --thermal`: the thermal sensors this machine exposes, their readings, the governor's call.

Reads sysfs once (or a fake tree given with --sysfs-root) and prints every sensor the thermal governor
can see, marking the zones that count, then what the governor would decide from that one sample.
Unknown readings print as "unknown"; nothing here needs privileges or a model.
"""

from __future__ import annotations

from qwen3tts.appliance.thermal.governor import ThermalGovernor, level_names
from qwen3tts.appliance.thermal.sensors import SensorSnapshot, read_sensors
from qwen3tts.settings import ThermalSettings

UNKNOWN = "unknown"


def print_thermal_report(thermal: ThermalSettings) -> None:
    snapshot = read_sensors(thermal.sysfs_root)
    print(f"sysfs root: {thermal.sysfs_root}")
    for line in sensor_lines(snapshot, thermal.zone_types):
        print(line)
    decision = ThermalGovernor(thermal).update(snapshot, now=0.0)
    print("governor:")
    print(f"  temperature: {_celsius(decision.raw_temperature_c)} from {decision.temperature_source}")
    step_up_c = decision.t_hot_c - thermal.hysteresis_c
    print(f"  T_hot: {decision.t_hot_c:.1f} °C ({decision.t_hot_source}); "
          f"step up at or below {step_up_c:.1f} °C after {thermal.dwell_s:g} s")  # fmt: skip
    print(f"  GPU throttling: {', '.join(decision.throttle_reasons) or 'none'}")
    levels = zip(level_names(len(thermal.batch_levels)), thermal.batch_levels, strict=True)
    print(f"  levels: {', '.join(f'{name}={batch}' for name, batch in levels)}")
    print(f"  decision: level {decision.level_name}, batch {decision.batch} ({decision.reason})")
    if not thermal.enabled:
        print("  note: thermal.enabled is false, so the daemon does not run the governor")


def sensor_lines(snapshot: SensorSnapshot, zone_types: tuple[str, ...]) -> list[str]:
    """Human-readable lines for every sensor in `snapshot`; counted zones are marked with '*'."""
    counted = set(zone_types)
    lines = [f"thermal zones (* counts: {', '.join(zone_types)}):"]
    for zone in snapshot.zones:
        mark = "*" if zone.type in counted else " "
        trips = ", ".join(f"{t.type or UNKNOWN} {_celsius(t.temp_c)}" for t in zone.trips)
        lines.append(f" {mark} {zone.name} {zone.type or UNKNOWN}: {_celsius(zone.temp_c)}"
                     + (f"  trips: {trips}" if trips else ""))  # fmt: skip
    lines += _none_if_empty(snapshot.zones)
    lines.append("hwmon coretemp:")
    for temp in snapshot.coretemp:
        limits = f"  max {_celsius(temp.max_c)}, crit {_celsius(temp.crit_c)}"
        lines.append(f"   {temp.chip} {temp.label}: {_celsius(temp.temp_c)}{limits}")
    lines += _none_if_empty(snapshot.coretemp)
    lines.append("GPU:")
    for gt in snapshot.gpus:
        throttle = (", ".join(gt.throttle_reasons) or "none") if gt.throttle_known else UNKNOWN
        lines.append(f"   {gt.card} {gt.driver} {gt.gt}: {_mhz(gt.act_freq_mhz)} of {_mhz(gt.max_freq_mhz)}"
                     f", throttle: {throttle}")  # fmt: skip
    lines += _none_if_empty(snapshot.gpus)
    lines.append("NPU:")
    for npu in snapshot.npus:
        busy = UNKNOWN if npu.busy_time_us is None else f"{npu.busy_time_us} us"
        lines.append(f"   {npu.name}: busy time {busy}, frequency {_mhz(npu.freq_mhz)}")
    lines += _none_if_empty(snapshot.npus)
    return lines


def _none_if_empty(items) -> list[str]:
    return [] if items else ["   none found"]


def _celsius(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:.1f} °C"


def _mhz(value: int | None) -> str:
    return UNKNOWN if value is None else f"{value} MHz"
