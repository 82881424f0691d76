"""The thermal governor: EWMA, fast down, dwell-gated up, throttle bits, and the sampling monitor.

Governor tests feed SensorSnapshots sample by sample with explicit times (one sample per second);
monitor tests read fake sysfs trees with a fake clock and a recording engine.
"""

import dataclasses
import errno
import itertools
import logging
import random
import threading

import pytest
from engine_fakes import FakeRunner, fake_prompt_builder
from fake_sysfs import laptop

from qwen3tts.appliance.priority import Priority
from qwen3tts.appliance.thermal.accelerators import GpuGt
from qwen3tts.appliance.thermal.governor import ThermalGovernor, ThermalMonitor, level_names
from qwen3tts.appliance.thermal.sensors import SensorSnapshot, ThermalZone, TripPoint, read_sensors
from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request
from qwen3tts.errors import ConfigError
from qwen3tts.settings import ThermalSettings

# T_hot 85 °C (no trip points), step up at or below 80 °C after 30 s; no smoothing unless a test asks.
SETTINGS = ThermalSettings(
    ewma_alpha=1.0, t_hot_c=85.0, hysteresis_c=5.0, dwell_s=30.0, batch_levels=(4, 2, 1)
)


def snap(temp_c, trips=(), throttle=()):
    zone = ThermalZone("thermal_zone0", "x86_pkg_temp", temp_c, tuple(TripPoint(k, t, c) for k, (t, c) in
                                                                      enumerate(trips)))  # fmt: skip
    gpu = GpuGt("card0", "i915", "gt0", 300, 1300, tuple(throttle), True)
    return SensorSnapshot(zones=(zone,), gpus=(gpu,))


def drive(governor, temps, start=0.0, **snap_kwargs):
    """Feed one sample per second; returns the batch after each sample."""
    return [governor.update(snap(t, **snap_kwargs), start + i).batch for i, t in enumerate(temps)]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class RecordingEngine:
    def __init__(self):
        self.batches = []

    def set_max_batch(self, n):
        self.batches.append(n)


# ---- the governor ----


def test_a_heating_ramp_steps_down_at_the_first_sample_whose_smoothed_temperature_passes_t_hot():
    governor = ThermalGovernor(dataclasses.replace(SETTINGS, ewma_alpha=0.5))
    # raw 70, 80, 90, 100, 100 -> EWMA 70, 75, 82.5, 91.25, 95.6: raw passes 85 at sample 2, the EWMA at 3.
    assert drive(governor, [70, 80, 90, 100, 100, 100]) == [4, 4, 4, 2, 1, 1]
    assert governor.smoothed_c == pytest.approx(97.8125)


def test_each_hot_sample_steps_down_one_level_and_the_decision_says_why():
    governor = ThermalGovernor(SETTINGS)
    first = governor.update(snap(86.0), 0.0)
    assert (first.level, first.level_name, first.batch, first.changed) == (1, "warm", 2, True)
    assert "86.0 °C above T_hot 85.0 °C" in first.reason
    second = governor.update(snap(86.0), 1.0)
    third = governor.update(snap(86.0), 2.0)
    assert (second.batch, third.batch, third.changed) == (1, 1, False)
    assert "already at the lowest batch" in third.reason


def test_t_hot_is_the_lowest_passive_trip_minus_the_margin_when_a_counted_zone_has_one():
    trips = [("passive", 0.0), ("passive", 80.0), ("critical", 100.0)]  # 0 °C: an unset user trip
    governor = ThermalGovernor(SETTINGS)
    decision = governor.update(snap(76.0, trips=trips), 0.0)
    assert (decision.t_hot_c, decision.batch) == (75.0, 2)
    assert decision.t_hot_source == "passive trip 80.0 °C on thermal_zone0 minus 5.0 °C"
    no_trip = ThermalGovernor(SETTINGS).update(snap(76.0), 0.0)
    assert (no_trip.t_hot_c, no_trip.t_hot_source, no_trip.batch) == (85.0, "settings", 4)


def test_cooling_steps_up_one_level_per_full_dwell_below_t_hot_minus_the_hysteresis():
    governor = ThermalGovernor(SETTINGS)
    assert drive(governor, [90, 90]) == [2, 1]
    batches = drive(governor, [70] * 70, start=2.0)
    # first cool sample at t=2; up at t=32 (30 s later), up again a whole dwell after that, at t=62.
    assert batches.index(2) == 30 and batches.index(4) == 60
    assert set(batches[:30]) == {1} and set(batches[30:60]) == {2} and set(batches[60:]) == {4}


def test_a_sample_between_t_hot_minus_hysteresis_and_t_hot_restarts_the_dwell():
    governor = ThermalGovernor(SETTINGS)
    drive(governor, [90])  # batch 2 at t=0
    batches = drive(governor, [70] * 20 + [82] + [70] * 40, start=1.0)
    # cool from t=1..20, 82 °C at t=21 (not hot, not cool), cool again from t=22: up at t=52.
    assert batches.index(4) == 51
    assert set(batches[:51]) == {2}


def test_a_gpu_throttle_bit_steps_down_at_once_even_when_the_package_is_cool():
    governor = ThermalGovernor(SETTINGS)
    decision = governor.update(snap(50.0, throttle=("thermal",)), 0.0)
    assert (decision.batch, decision.throttle_reasons) == (2, ("card0/gt0:thermal",))
    assert decision.reason == "GPU throttling (card0/gt0:thermal)"
    assert drive(governor, [50, 50], start=1.0, throttle=("pl1",)) == [1, 1]
    batches = drive(governor, [50] * 31, start=3.0)  # throttling cleared, cool: back up after the dwell
    assert batches == [1] * 30 + [2]


def test_square_wave_noise_across_both_thresholds_steps_down_and_then_never_flaps():
    governor = ThermalGovernor(SETTINGS)
    temps = [86 if i % 2 == 0 else 79 for i in range(300)]  # hot, cool, hot, cool ... at 1 Hz
    batches = drive(governor, temps)
    assert batches[:3] == [2, 2, 1]
    assert sum(a != b for a, b in itertools.pairwise(batches)) == 1  # only 2 -> 1


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_random_noise_at_the_threshold_never_steps_up_sooner_than_a_dwell_after_any_change(alpha):
    rng = random.Random(7)
    governor = ThermalGovernor(dataclasses.replace(SETTINGS, ewma_alpha=alpha, dwell_s=10.0))
    # A slow swing across both thresholds plus sensor noise; a governor without dwell would flap.
    temps = [82.5 + 6.0 * (1 if (i // 25) % 2 == 0 else -1) + rng.uniform(-4, 4) for i in range(1000)]
    batches = drive(governor, temps)
    changes = [(t, b) for t, (a, b) in enumerate(zip([4, *batches], batches, strict=False)) if a != b]
    ups = [i for i in range(1, len(changes)) if changes[i][1] > changes[i - 1][1]]
    assert len(ups) >= 5, "the input should have made the governor step up and down repeatedly"
    for i in ups:
        assert changes[i][0] - changes[i - 1][0] >= 10, f"stepped up {changes[i - 1 : i + 1]}"


def test_without_a_temperature_reading_the_level_holds_and_never_steps_up():
    governor = ThermalGovernor(SETTINGS)
    assert drive(governor, [None] * 5) == [4] * 5
    drive(governor, [90], start=5.0)
    decisions = [governor.update(snap(None), 6.0 + i) for i in range(60)]
    assert {d.batch for d in decisions} == {2} and decisions[-1].reason == "no temperature reading"
    assert decisions[-1].temperature_c == 90.0  # the EWMA keeps its last value through the gap


@pytest.mark.parametrize("levels", [(), (4, 0), (2, 4), (4.0, 2)])
def test_batch_levels_must_be_positive_integers_that_do_not_grow_when_hot(levels):
    with pytest.raises(ConfigError, match=r"thermal\.batch_levels"):
        ThermalGovernor(dataclasses.replace(SETTINGS, batch_levels=levels))


def test_levels_are_named_cool_warm_hot():
    assert level_names(1) == ("cool",)
    assert level_names(2) == ("cool", "hot")
    assert level_names(3) == ("cool", "warm", "hot")
    assert level_names(4) == ("cool", "warm1", "warm2", "hot")


def test_a_decision_fills_the_systemd_status_line():
    decision = ThermalGovernor(SETTINGS).update(snap(86.04), 0.0)
    assert decision.notify_status() == "thermal=warm; batch=2"


# ---- the monitor: sysfs -> governor -> engine + on_change ----


def monitor_for(root, engine, clock, **settings):
    calls = []
    thermal = dataclasses.replace(SETTINGS, sysfs_root=root, **settings)
    monitor = ThermalMonitor(thermal, engine, lambda *args: calls.append(args), clock=clock)
    return monitor, calls


def test_the_monitor_sets_the_batch_at_start_and_on_each_change_and_reports_it(tmp_path, caplog):
    fake, engine, clock = laptop(tmp_path, package_c=60.0), RecordingEngine(), FakeClock()
    monitor, calls = monitor_for(tmp_path, engine, clock)
    monitor.sample_once()
    clock.now = 1.0
    monitor.sample_once()  # unchanged: nothing applied
    fake.set_zone_temp(1, 86.0)  # T_hot is 85 from the 90 °C passive trip
    clock.now = 2.0
    with caplog.at_level(logging.WARNING, logger="qwen3tts.appliance.thermal.governor"):
        decision = monitor.sample_once()
    assert engine.batches == [4, 2]
    assert calls == [("cool", 4, "start"), ("warm", 2, "temperature 86.0 °C above T_hot 85.0 °C")]
    assert monitor.decision is decision and decision.temperature_source == "thermal_zone1 (x86_pkg_temp)"
    assert "thermal level cool -> warm, batch 2" in caplog.text


def test_an_i915_or_xe_throttle_bit_in_sysfs_steps_the_engine_down_at_the_next_sample(tmp_path):
    fake, engine, clock = laptop(tmp_path), RecordingEngine(), FakeClock()
    fake.xe(card=2)
    monitor, _ = monitor_for(tmp_path, engine, clock)
    monitor.sample_once()
    fake.set_xe_throttle(2, 0, 0, {"thermal"})
    monitor.sample_once()
    fake.set_xe_throttle(2, 0, 0, set())
    fake.set_i915_throttle(1, 0, {"prochot"})
    monitor.sample_once()
    assert engine.batches == [4, 2, 1]


def test_broken_sensor_files_never_crash_the_monitor(tmp_path, monkeypatch):
    fake, engine, clock = laptop(tmp_path), RecordingEngine(), FakeClock()
    for path in (
        "class/thermal/thermal_zone1/temp",
        "class/thermal/thermal_zone1/type",
        "class/hwmon/hwmon3/temp1_input",
        "class/drm/card1/gt/gt0/throttle_reason_status",
    ):
        fake.fail(path, errno.EIO)  # fmt: skip
    fake.write("class/hwmon/hwmon3/temp2_input", "garbage")
    fake.install(monkeypatch)
    monitor, calls = monitor_for(tmp_path, engine, clock)
    decision = monitor.sample_once()
    assert (decision.raw_temperature_c, decision.batch, calls) == (None, 4, [("cool", 4, "start")])


def test_a_failed_announcement_is_retried_at_the_next_sample(tmp_path):
    laptop(tmp_path, package_c=95.0)
    engine, clock, calls = RecordingEngine(), FakeClock(), []

    def flaky(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("broker gone")

    monitor = ThermalMonitor(dataclasses.replace(SETTINGS, sysfs_root=tmp_path), engine, flaky, clock=clock)
    with pytest.raises(RuntimeError):
        monitor.sample_once()
    monitor.sample_once()
    assert engine.batches == [2, 1] and [c[:2] for c in calls] == [("warm", 2), ("hot", 1)]


def test_the_thread_samples_until_stopped_and_survives_a_failing_read(tmp_path):
    fake = laptop(tmp_path, package_c=60.0)
    engine, reads = RecordingEngine(), []
    started, hot = threading.Event(), threading.Event()

    def read(root):
        reads.append(root)
        if len(reads) == 2:
            raise OSError("simulated reader bug")
        return read_sensors(root)

    def on_change(level, batch, reason):
        (hot if batch == 2 else started).set()

    settings = dataclasses.replace(SETTINGS, sysfs_root=tmp_path, interval_s=0.05)
    monitor = ThermalMonitor(settings, engine, on_change, read=read)
    monitor.start()
    thread = monitor._thread
    try:
        assert started.wait(5.0), "the thread did not take a first sample"
        fake.set_zone_temp(1, 88.0)
        assert hot.wait(5.0), "the thread did not react to the hot zone"
    finally:
        monitor.stop()
    assert engine.batches == [4, 2] and len(reads) >= 3
    assert not thread.is_alive()  # stop() joined it: no more samples


# ---- emergencies are never deferred ----


def test_an_emergency_starts_at_once_even_when_the_governor_has_cut_the_batch_to_one(tmp_path):
    laptop(tmp_path, package_c=99.0)
    runner = FakeRunner()
    engine = Engine(runner, fake_prompt_builder(runner.hidden_size), EngineConfig(max_num_seqs=4))
    monitor, _ = monitor_for(tmp_path, engine, FakeClock(), batch_levels=(4, 1))
    assert monitor.sample_once().batch == 1
    normal = [engine.submit(Request(name, f"normal {name} text", seed=1)) for name in ("a", "b")]
    engine.step()
    assert engine.stats().num_running == 1
    emergency = engine.submit(
        Request("fire", "leave the building now", rank=Priority.EMERGENCY.rank, urgent=True, seed=1)
    )
    engine.step()
    running = {seq.request.id for seq in engine.scheduler.running}
    assert running == {"a", "fire"} and engine.stats().max_batch == 1
    for _ in range(500):
        if all(h.wait(0) for h in [*normal, emergency]):
            break
        engine.step()
    assert all(h.wait(0) and h.error is None for h in [*normal, emergency])


def test_every_sample_beats_the_heartbeat_and_a_lost_sensor_is_logged_once(tmp_path, monkeypatch, caplog):
    fake, beats = laptop(tmp_path), []
    settings = dataclasses.replace(SETTINGS, sysfs_root=tmp_path)
    beat = lambda: beats.append(0)  # noqa: E731
    monitor = ThermalMonitor(settings, RecordingEngine(), clock=FakeClock(), heartbeat=beat)
    monitor.sample_once()
    for path in (
        "class/thermal/thermal_zone1/temp",
        "class/hwmon/hwmon3/temp1_input",
        "class/hwmon/hwmon3/temp2_input",
    ):
        fake.fail(path, errno.EIO)  # fmt: skip
    fake.install(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="qwen3tts.appliance.thermal.governor"):
        monitor.sample_once()
        monitor.sample_once()
    assert len(beats) == 3
    assert caplog.text.count("no readable temperature") == 1
