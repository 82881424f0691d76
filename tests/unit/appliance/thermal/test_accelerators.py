"""The accelerators' sysfs readers over fake trees: i915 and xe frequencies and throttle reasons, the NPU's
busy time, and throttle files that cannot be read making throttling unknown, not set."""

import errno

from fake_sysfs import FakeSysfs

from qwen3tts.appliance.thermal.accelerators import GpuGt, NpuReading, read_gpus, read_npus
from qwen3tts.appliance.thermal.sensors import read_sensors


def test_i915_frequencies_and_set_throttle_reasons_are_read_per_gt(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.i915(card=0, gt=0, act_mhz=350, max_mhz=1300)
    fake.i915(card=0, gt=1, act_mhz=700, max_mhz=1300, throttle={"thermal", "pl1"})
    assert read_gpus(tmp_path) == [
        GpuGt("card0", "i915", "gt0", 350, 1300, (), True),
        GpuGt("card0", "i915", "gt1", 700, 1300, ("status", "pl1", "thermal"), True),
    ]
    reasons = read_sensors(tmp_path).gpu_throttle_reasons
    assert reasons == ("card0/gt1:status", "card0/gt1:pl1", "card0/gt1:thermal")


def test_old_i915_without_per_gt_files_gives_frequencies_and_unknown_throttling(tmp_path):
    FakeSysfs(tmp_path).i915_legacy(card=0, act_mhz=450, rp0_mhz=1150)
    assert read_gpus(tmp_path) == [GpuGt("card0", "i915", "legacy", 450, 1150, (), False)]


def test_xe_frequencies_and_throttle_reasons_are_read_per_tile_and_gt(tmp_path):
    fake = FakeSysfs(tmp_path)
    fake.xe(card=1, tile=0, gt=0, act_mhz=1200, max_mhz=2000, throttle={"prochot"})
    fake.xe(card=1, tile=0, gt=1, act_mhz=0, max_mhz=1000)
    assert read_gpus(tmp_path) == [
        GpuGt("card1", "xe", "tile0/gt0", 1200, 2000, ("status", "prochot"), True),
        GpuGt("card1", "xe", "tile0/gt1", 0, 1000, (), True),
    ]


def test_the_npu_busy_time_and_frequency_are_read(tmp_path):
    FakeSysfs(tmp_path).npu(0, busy_us=987654, freq_mhz=1400)
    assert read_npus(tmp_path) == [NpuReading("accel0", 987654, 1400)]


def test_gpu_throttle_files_that_all_fail_make_throttling_unknown_not_set(tmp_path, monkeypatch):
    fake = FakeSysfs(tmp_path)
    fake.i915(card=0, throttle={"thermal"})
    for name in ("status", "pl1", "pl2", "pl4", "thermal", "prochot", "ratl", "vr_thermalert", "vr_tdc"):
        fake.fail(f"class/drm/card0/gt/gt0/throttle_reason_{name}", errno.EIO)
    fake.install(monkeypatch)
    [gt] = read_gpus(tmp_path)
    assert (gt.throttle_reasons, gt.throttle_known, gt.act_freq_mhz) == ((), False, 300)
