"""The sensor lines of `qwen3tts doctor --thermal` (doctor/thermal.py) from hand-made snapshots: what a
machine without sensors prints, and readings the kernel did not give. The whole report over a fake
sysfs tree is tests/unit/appliance/thermal/test_thermal_doctor.py."""

from qwen3tts.appliance.thermal.accelerators import GpuGt, NpuReading
from qwen3tts.appliance.thermal.sensors import HwmonTemp, SensorSnapshot, ThermalZone, TripPoint
from qwen3tts.doctor.thermal import sensor_lines


def test_a_machine_without_sensors_says_none_found_under_every_heading():
    assert sensor_lines(SensorSnapshot(), ("x86_pkg_temp", "TCPU")) == [
        "thermal zones (* counts: x86_pkg_temp, TCPU):",
        "   none found",
        "hwmon coretemp:",
        "   none found",
        "GPU:",
        "   none found",
        "NPU:",
        "   none found",
    ]


def test_readings_the_kernel_did_not_give_print_as_unknown():
    snapshot = SensorSnapshot(
        zones=(ThermalZone("thermal_zone3", None, None, (TripPoint(0, None, None),)),),
        coretemp=(HwmonTemp("hwmon2", "Core 0", None, None, 95.0),),
        gpus=(GpuGt("card0", "xe", "tile0/gt0", None, None, (), throttle_known=False),),
        npus=(NpuReading("accel0", None, None),),
    )
    assert sensor_lines(snapshot, ("x86_pkg_temp",)) == [
        "thermal zones (* counts: x86_pkg_temp):",
        "   thermal_zone3 unknown: unknown  trips: unknown unknown",
        "hwmon coretemp:",
        "   hwmon2 Core 0: unknown  max unknown, crit 95.0 °C",
        "GPU:",
        "   card0 xe tile0/gt0: unknown of unknown, throttle: unknown",
        "NPU:",
        "   accel0: busy time unknown, frequency unknown",
    ]


def test_a_counted_zone_is_marked_and_a_throttled_gpu_names_its_reasons():
    snapshot = SensorSnapshot(
        zones=(
            ThermalZone("thermal_zone1", "TCPU", 71.5, ()),
            ThermalZone("thermal_zone2", "acpitz", 40.0, ()),
        ),
        gpus=(GpuGt("card1", "i915", "gt0", 300, 1300, ("thermal", "pl1"), throttle_known=True),),
    )
    lines = sensor_lines(snapshot, ("TCPU",))
    assert " * thermal_zone1 TCPU: 71.5 °C" in lines
    assert "   thermal_zone2 acpitz: 40.0 °C" in lines
    assert "   card1 i915 gt0: 300 MHz of 1300 MHz, throttle: thermal, pl1" in lines
