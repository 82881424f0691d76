"""sysfs readers over fake trees: what each source yields, and that broken files read as unknown."""

import errno

import pytest
from fake_sysfs import FakeSysfs, laptop

from qwen3tts.appliance.thermal.accelerators import NpuReading
from qwen3tts.appliance.thermal.sensors import (
    ThermalZone,
    TripPoint,
    read_coretemp,
    read_sensors,
    read_thermal_zones,
)

COUNTED = ("x86_pkg_temp", "TCPU")


def test_thermal_zones_are_read_in_numeric_order_with_types_temperatures_and_trip_points(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.zone(10, "TCPU", 61.5, trips=[("passive", 95.0), ("critical", 105.0)])
    fake.zone(2, "x86_pkg_temp", 58.25)
    fake.write("class/thermal/cooling_device0/type", "Processor")  # not a zone
    zones = read_thermal_zones(tmp_path)
    assert zones == [
        ThermalZone("thermal_zone2", "x86_pkg_temp", 58.25, ()),
        ThermalZone(
            "thermal_zone10", "TCPU", 61.5, (TripPoint(0, "passive", 95.0), TripPoint(1, "critical", 105.0))
        ),
    ]


def test_only_zones_of_the_configured_types_count_and_the_hottest_one_wins(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.zone(0, "acpitz", 99.0)  # hot, but not a type that counts
    fake.zone(1, "x86_pkg_temp", 70.0)
    fake.zone(2, "TCPU", 72.0)
    snapshot = read_sensors(tmp_path)
    assert snapshot.temperature(COUNTED) == (72.0, "thermal_zone2 (TCPU)")
    assert snapshot.temperature(("acpitz",)) == (99.0, "thermal_zone0 (acpitz)")


def test_the_lowest_enabled_passive_trip_of_a_counted_zone_sets_the_limit(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.zone(0, "acpitz", 40.0, trips=[("passive", 60.0)])  # not counted
    fake.zone(1, "x86_pkg_temp", 50.0, trips=[("passive", 0.0), ("passive", 92.0), ("hot", 80.0)])
    fake.zone(2, "TCPU", 50.0, trips=[("passive", 97.0), ("critical", 105.0)])
    snapshot = read_sensors(tmp_path)
    # The 0 °C trip is x86_pkg_temp's unset user trip; "hot" is not passive.
    assert snapshot.lowest_passive_trip(COUNTED) == (92.0, "thermal_zone1")
    assert read_sensors(tmp_path / "nothing").lowest_passive_trip(COUNTED) == (None, "")


def test_coretemp_is_read_with_labels_and_limits_and_other_hwmon_chips_are_ignored(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.other_hwmon(0, "nvme", 45.0)
    fake.coretemp(1, {"Package id 0": 66.0, "Core 0": 64.0}, max_c=100.0, crit_c=105.0)
    temps = read_coretemp(tmp_path)
    assert [(t.chip, t.label, t.temp_c, t.max_c, t.crit_c) for t in temps] == [
        ("hwmon1", "Package id 0", 66.0, 100.0, 105.0),
        ("hwmon1", "Core 0", 64.0, 100.0, 105.0),
    ]


def test_without_a_counted_zone_the_coretemp_package_temperature_is_used(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.zone(0, "acpitz", 30.0)
    fake.coretemp(0, {"Core 0": 80.0, "Package id 0": 71.0})
    assert read_sensors(tmp_path).temperature(COUNTED) == (71.0, "hwmon0 coretemp Package id 0")


def test_an_empty_root_gives_an_empty_snapshot_and_no_temperature(tmp_path):
    snapshot = read_sensors(tmp_path / "does-not-exist")
    assert (snapshot.zones, snapshot.coretemp, snapshot.gpus, snapshot.npus) == ((), (), (), ())
    assert snapshot.temperature(COUNTED) == (None, "no readable sensor")
    assert snapshot.gpu_throttle_reasons == ()


@pytest.mark.parametrize("error", [errno.EIO, errno.ENODATA, errno.EAGAIN, errno.EACCES])
def test_a_zone_whose_temp_raises_reads_as_unknown_and_the_others_still_count(tmp_path, monkeypatch, error):
    fake = laptop(tmp_path, package_c=77.0)
    fake.zone(4, "TCPU", 60.0)
    fake.fail("class/thermal/thermal_zone1/temp", error)  # the hotter x86_pkg_temp zone
    fake.install(monkeypatch)
    snapshot = read_sensors(tmp_path)
    assert [z.temp_c for z in snapshot.zones] == [40.0, None, 35.0, 60.0]
    assert snapshot.temperature(COUNTED) == (60.0, "thermal_zone4 (TCPU)")


def test_garbled_empty_binary_and_directory_files_read_as_unknown_without_raising(tmp_path, monkeypatch):
    fake = laptop(tmp_path)
    fake.write("class/thermal/thermal_zone0/temp", "n/a")
    fake.write("class/thermal/thermal_zone2/temp", "")
    (tmp_path / "class/thermal/thermal_zone1/temp").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "class/hwmon/hwmon3/temp1_input").unlink()
    (tmp_path / "class/hwmon/hwmon3/temp1_input").mkdir()
    fake.fail("class/thermal/thermal_zone1/type", errno.EIO)
    fake.fail("class/drm/card1/gt/gt0/throttle_reason_thermal", errno.EIO)
    fake.fail("class/accel/accel0/device/npu_busy_time_us", errno.EIO)
    fake.install(monkeypatch)
    snapshot = read_sensors(tmp_path)
    zones = [(z.type, z.temp_c) for z in snapshot.zones]
    assert zones == [("acpitz", None), (None, None), ("iwlwifi_1", None)]
    assert snapshot.coretemp[0].temp_c is None and snapshot.coretemp[1].temp_c == 48.0
    assert snapshot.gpus[0].throttle_known and snapshot.gpus[0].throttle_reasons == ()
    assert snapshot.npus == (NpuReading("accel0", None, 0),)
    assert snapshot.temperature(COUNTED) == (48.0, "hwmon3 coretemp Core 0")
