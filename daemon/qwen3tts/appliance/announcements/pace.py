"""Synthesis against playback: how much audio a play holds back before it starts, and whether one more
piece may join the engine's batch.

The rule is the listener's: speech that has started must never wait for audio. A stream synthesised at
rtf (synthesis time / audio time) > 1 falls behind by 1 - 1/rtf of every second it plays, so a play
starts once that share of all it will say is in hand; faster than real time, a short jitter buffer is
enough. And a piece beyond the one that plays next joins the batch only while every stream would still
run faster than real time with it: the engine's steps are shared, so on a machine that synthesises one
stream at about real time, a sentence synthesised ahead slowed the one being waited for and the first
words came seconds later (docs/announcer.md).
"""

from __future__ import annotations

import numpy as np

from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.engine.stats import EngineStats

FRAME_S = 0.08  # audio per frame of the 12.5 Hz codec


def jitter_threshold(jitter_buffer_ms: int, expected_duration_s: float | None, rtf: float | None) -> int:
    """Samples to buffer before speech starts: max(jitter_buffer_ms, expected * max(0, 1 - 1/rtf)).

    rtf = synthesis time / audio time. With rtf > 1 the audio arrives at 1/rtf of real time, so a
    T-second play needs T * (1 - 1/rtf) seconds in hand at the start to play without a stall.
    Unknown rtf or duration -> just jitter_buffer_ms.
    """
    floor = jitter_buffer_ms * MODEL_RATE // 1000
    if not expected_duration_s or not rtf or rtf <= 0:
        return floor
    shortfall = expected_duration_s * max(0.0, 1.0 - 1.0 / rtf)
    return max(floor, int(np.ceil(shortfall * MODEL_RATE)))


def stream_rtf(stats: EngineStats, measured: float | None) -> float | None:
    """Synthesis time / audio time of one stream now: from the engine's rate while it steps, else its
    rate over the last seconds (which counts the idle time before a request: it errs slow), else
    `measured` (the last pieces' own figure) when nothing runs."""
    if stats.num_running > 0:
        rate = stats.decode_frames_per_second or stats.frames_per_second
        if rate > 0:
            return stats.num_running / (rate * FRAME_S)
    return measured


def rtf_with(streams: int, stats: EngineStats, measured: float | None) -> float | None:
    """One stream's rtf if `streams` ran at once, on the engine's throughput as measured: a step is taken
    to grow with the batch (it grows less on most CPUs, so this errs on the side of the piece playing)."""
    if stats.num_running > 0:
        rate = stats.decode_frames_per_second or stats.frames_per_second
        if rate > 0:
            return streams / (rate * FRAME_S)
    return None if measured is None else measured * streams


def may_join(streams: int, stats: EngineStats, measured: float | None) -> bool:
    """Whether one more piece may join `streams` running ones: only while every stream would still run
    faster than real time (no figure yet: not until one is measured)."""
    rtf = rtf_with(streams + 1, stats, measured)
    return rtf is not None and rtf < 1.0
