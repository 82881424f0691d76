"""pace.py on given engine figures: one stream's speed now (the rate while the engine steps first), and
whether one more stream may join without slowing every stream below real time."""

from __future__ import annotations

import pytest

from qwen3tts.appliance.announcements.pace import may_join, rtf_with, stream_rtf
from qwen3tts.engine.stats import EngineStats


def figures(running: int, wall_fps: float = 0.0, decode_fps: float = 0.0) -> EngineStats:
    return EngineStats(running, 0, 0, 0, wall_fps, 4, 0, decode_frames_per_second=decode_fps)


def test_one_stream_s_speed_is_read_from_the_rate_while_stepping_before_the_wall_clock_window():
    # one stream that has just started: 5 frames in the 2 s window, made in 0.4 s of steps
    assert stream_rtf(figures(1, wall_fps=2.5, decode_fps=12.5), None) == pytest.approx(1.0)
    assert stream_rtf(figures(1, wall_fps=2.5), None) == pytest.approx(5.0)  # too few steps: errs slow
    assert stream_rtf(figures(2, decode_fps=50.0), 3.0) == pytest.approx(0.5)
    assert stream_rtf(figures(0), 1.3) == 1.3  # nothing runs: the pieces' own figure
    assert stream_rtf(figures(0), None) is None


@pytest.mark.parametrize(
    ("stats", "measured", "streams", "expected"),
    [
        (figures(1, decode_fps=12.5), None, 2, 2.0),  # one stream at real time: two share the steps
        (figures(2, decode_fps=50.0), None, 3, 0.75),
        (figures(0), 0.4, 2, 0.8),  # nothing runs: the last measured figure, as if at one stream
        (figures(0), None, 2, None),
    ],
)
def test_a_stream_s_rtf_with_more_streams_shares_the_throughput_measured(stats, measured, streams, expected):
    assert rtf_with(streams, stats, measured) == (expected if expected is None else pytest.approx(expected))


def test_one_more_stream_joins_only_while_every_stream_stays_faster_than_real_time():
    assert may_join(1, figures(1, decode_fps=40.0), None)  # two at 0.625
    assert may_join(2, figures(2, decode_fps=40.0), None)  # three at 0.94
    assert not may_join(3, figures(3, decode_fps=40.0), None)  # four at 1.25
    assert not may_join(1, figures(1, decode_fps=11.0), 0.1)  # one stream at 1.14 already: none joins
    assert not may_join(0, figures(0), None)  # nothing measured yet: the piece waits for a figure
    assert may_join(0, figures(0), 0.3)
