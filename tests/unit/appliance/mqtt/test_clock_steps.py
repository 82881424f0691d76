"""A step of the wall clock (NTP at boot, `date -s`) under `ttl`, `expires_at` and repeats, with an injected
wall clock and monotonic clock: once an announcement is accepted its deadlines run on the steady time line
(steady_clock.py), so a step of an hour either way neither expires it early nor keeps it, nor delays a
repeat. The real-process form of this is tests/e2e/test_clock_step.py."""

from __future__ import annotations

import pytest
from audio_fakes import FakeClock

from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.mqtt import say_reader
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.steady_clock import SteadyClock

HOUR = 3600.0


@pytest.fixture
def clocks():
    wall, monotonic = FakeClock(start=1_800_000_000.0), FakeClock(start=500.0)
    return wall, monotonic, SteadyClock(wall, monotonic)


def admit(timeline: SteadyClock, wall: FakeClock, **fields):
    return say_reader.admit(AnnouncementPolicy(timeline=timeline), wall(), text="Platform three.", **fields)


def test_the_steady_clock_reads_as_unix_time_and_does_not_move_when_the_wall_clock_steps(clocks):
    wall, monotonic, timeline = clocks
    assert timeline() == wall()
    wall.advance(HOUR)
    monotonic.advance(2.0)
    assert timeline() == 1_800_000_002.0  # two seconds passed; the hour was a step
    assert timeline.from_wall(wall() + 60) == pytest.approx(timeline() + 60)  # judged by the wall now


@pytest.mark.parametrize("step", [HOUR, -HOUR])
def test_a_ttl_runs_on_the_monotonic_clock_whatever_the_wall_clock_does(clocks, step):
    wall, monotonic, timeline = clocks
    ann = admit(timeline, wall, ttl=60)
    wall.advance(step)
    monotonic.advance(59)
    assert not ann.expired(timeline())
    monotonic.advance(1)
    assert ann.expired(timeline())


@pytest.mark.parametrize("step", [HOUR, -HOUR])
def test_expires_at_is_read_against_the_wall_clock_when_it_arrives_and_then_runs_down(clocks, step):
    wall, monotonic, timeline = clocks
    ann = admit(timeline, wall, expires_at=wall() + 120)
    wall.advance(step)
    monotonic.advance(119)
    assert not ann.expired(timeline())
    monotonic.advance(1)
    assert ann.expired(timeline())
    late = admit(timeline, wall, expires_at=wall() - 1)  # already past by the wall clock as it is now
    assert late.expired(timeline())


@pytest.mark.parametrize("step", [HOUR, -HOUR])
def test_a_repeat_waits_its_interval_on_the_monotonic_clock(tmp_path, clocks, step):
    wall, monotonic, timeline = clocks
    queue = AnnouncementQueue(tmp_path / "spool")
    ann = admit(timeline, wall, id="bell", repeat=2, repeat_interval=30)
    queue.put(ann)
    [waiting] = queue.ordered(timeline())  # the records are frozen: the queue holds the copy it spooled
    playing = queue.pop(waiting)
    again = queue.done(playing, timeline())
    assert again is not None  # played once: waits for its repeat
    wall.advance(step)
    monotonic.advance(29)
    assert queue.ordered(timeline()) == []
    monotonic.advance(1)
    assert queue.ordered(timeline()) == [again]
