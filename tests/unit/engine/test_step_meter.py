"""The engine's step meter on a fake clock: frames per second over the wall-clock window, the rate while
it steps (idle time before a request does not count), and the mean batch."""

from __future__ import annotations

import pytest

from qwen3tts.engine.stats import DECODE_RATE_STEPS, FPS_WINDOW_S, StepMeter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def steps(meter: StepMeter, clock: Clock, count: int, every: float, frames: int) -> None:
    for _ in range(count):
        clock.now += every
        meter.count(frames)


def test_a_stream_that_has_just_started_is_told_at_the_speed_it_runs_not_over_the_idle_window():
    clock = Clock()
    meter = StepMeter(clock)
    clock.now += 0.45
    meter.count(0)  # its prefill, after the engine was idle
    steps(meter, clock, 5, every=0.1, frames=1)  # one stream at 10 frames per second
    assert meter.decode_frames_per_second == pytest.approx(10.0)
    assert meter.frames_per_second == pytest.approx(5 / FPS_WINDOW_S)  # the wall-clock figure: 2.5


def test_the_rate_while_stepping_counts_every_stream_and_the_prefills_between_the_steps():
    clock = Clock()
    meter = StepMeter(clock)
    steps(meter, clock, 4, every=0.2, frames=2)  # two streams, 200 ms a step
    assert meter.decode_frames_per_second == pytest.approx(10.0)
    clock.now += 0.4
    meter.count(0)  # a new request's prefill holds both streams up
    steps(meter, clock, 1, every=0.2, frames=3)
    # 3 steps after the first in 1.2 s: 2 + 2 + 2 + 0 + 3 frames over 0.6 + 0.4 + 0.2 s
    assert meter.decode_frames_per_second == pytest.approx(9 / 1.2)


def test_no_rate_while_stepping_is_told_from_fewer_steps_than_it_needs():
    clock = Clock()
    meter = StepMeter(clock)
    steps(meter, clock, DECODE_RATE_STEPS - 1, every=0.1, frames=1)
    assert meter.decode_frames_per_second == 0.0
    steps(meter, clock, 1, every=0.1, frames=1)
    assert meter.decode_frames_per_second == pytest.approx(10.0)


def test_steps_older_than_the_window_leave_the_rates_and_the_mean_batch_counts_frame_steps_only():
    clock = Clock()
    meter = StepMeter(clock)
    steps(meter, clock, 10, every=0.1, frames=4)
    clock.now += 5.0  # idle
    steps(meter, clock, 4, every=0.05, frames=1)
    meter.count(0)  # a prefill-only step (same time) is no batch of 0
    assert meter.decode_frames_per_second == pytest.approx(3 / 0.15)
    assert meter.frames_per_second == pytest.approx(4 / FPS_WINDOW_S)
    assert meter.mean_batch() == pytest.approx((10 * 4 + 4 * 1) / 14)
    assert (meter.num_steps, meter.num_frames) == (14, 44)


def test_idle_time_between_two_requests_inside_the_window_does_not_count():
    clock = Clock()
    meter = StepMeter(clock)
    steps(meter, clock, 6, every=0.1, frames=1)  # a request at 10 frames per second, then it ends
    clock.now += 1.2  # idle: nothing to run
    started = clock.now
    clock.now += 0.2
    meter.count(0, started)  # the next request's prefill, 0.2 s of stepping
    for _ in range(4):  # its frames, a step right after the one before
        started = clock.now + 0.001
        clock.now += 0.1
        meter.count(1, started)
    # The window (2 s back from the last step, at 102.4) holds the first request's steps ending at 100.4,
    # 100.5 and 100.6, the prefill and the four steps. After the first of them: 2 + 0 + 4 frames over
    # 0.2 s + the prefill's own 0.2 s + 0.4 s of stepping; over the whole 2.0 s it was 3 frames per second.
    assert meter.decode_frames_per_second == pytest.approx(6 / 0.8)


def test_a_step_that_follows_the_one_before_at_once_counts_the_loops_own_time_between_them():
    clock = Clock()
    meter = StepMeter(clock)
    for _ in range(5):
        started = clock.now + 0.05  # the loop's own work between two steps (below IDLE_GAP_S) counts
        clock.now += 0.15
        meter.count(1, started)
    assert meter.decode_frames_per_second == pytest.approx(1 / 0.15)
