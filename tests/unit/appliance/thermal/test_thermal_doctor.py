"""`qwen3tts doctor --thermal --sysfs-root DIR`: the sensors found, their readings, the governor's call."""

import errno
import subprocess
import sys

from fake_sysfs import FakeSysfs, laptop

from qwen3tts.cli import main


def doctor_output(capsys, *args, global_args=()):
    code = main([*global_args, "doctor", "--thermal", *args])
    return code, capsys.readouterr().out


def test_doctor_lists_every_sensor_with_its_reading_and_marks_the_zones_that_count(tmp_path, capsys):
    fake = laptop(tmp_path, package_c=62.0)
    fake.xe(card=2, act_mhz=1250, max_mhz=2000)
    code, out = doctor_output(capsys, "--sysfs-root", str(tmp_path))
    assert code == 0
    assert f"sysfs root: {tmp_path}" in out
    assert "   thermal_zone0 acpitz: 40.0 °C  trips: critical 110.0 °C" in out
    assert " * thermal_zone1 x86_pkg_temp: 62.0 °C  trips: passive 0.0 °C, passive 90.0 °C" in out
    assert "   thermal_zone2 iwlwifi_1: 35.0 °C" in out
    assert "   hwmon3 Package id 0: 62.0 °C  max 100.0 °C, crit 100.0 °C" in out
    assert "   card1 i915 gt0: 300 MHz of 1300 MHz, throttle: none" in out
    assert "   card2 xe tile0/gt0: 1250 MHz of 2000 MHz, throttle: none" in out
    assert "   accel0: busy time 123456 us, frequency 0 MHz" in out
    assert "  temperature: 62.0 °C from thermal_zone1 (x86_pkg_temp)" in out
    assert "  T_hot: 85.0 °C (passive trip 90.0 °C on thermal_zone1 minus 5.0 °C)" in out
    assert "  decision: level cool, batch 4" in out


def test_doctor_shows_the_step_down_a_hot_and_throttled_chip_gets(tmp_path, capsys):
    fake = laptop(tmp_path, package_c=91.0)
    fake.set_i915_throttle(1, 0, {"thermal"})
    two_levels = ("--set", "thermal.batch_levels=[3,1]")
    code, out = doctor_output(capsys, "--sysfs-root", str(tmp_path), global_args=two_levels)
    assert code == 0
    assert "  GPU throttling: card1/gt0:status, card1/gt0:thermal" in out
    assert "  levels: cool=3, hot=1" in out
    assert "  decision: level hot, batch 1 (temperature 91.0 °C above T_hot 85.0 °C)" in out


def test_doctor_prints_unknown_for_broken_files_and_none_found_for_absent_ones(tmp_path, capsys, monkeypatch):
    fake = FakeSysfs(tmp_path)
    fake.zone(0, "TCPU", 70.0)
    fake.fail("class/thermal/thermal_zone0/temp", errno.EIO)
    fake.install(monkeypatch)
    code, out = doctor_output(capsys, "--sysfs-root", str(tmp_path))
    assert code == 0
    assert " * thermal_zone0 TCPU: unknown" in out
    assert out.count("   none found") == 3  # hwmon, GPU, NPU
    assert "  temperature: unknown from no readable sensor" in out
    assert "  decision: level cool, batch 4 (no temperature reading)" in out


def test_the_doctor_command_runs_as_a_subprocess_against_a_fake_tree(tmp_path):
    laptop(tmp_path, package_c=88.0)
    result = subprocess.run(
        [sys.executable, "-m", "qwen3tts", "doctor", "--thermal", "--sysfs-root", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "  decision: level warm, batch 2 (temperature 88.0 °C above T_hot 85.0 °C)" in result.stdout
