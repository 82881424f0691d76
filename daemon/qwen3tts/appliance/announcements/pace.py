"""Synthesis against playback: how much audio a play holds back before it starts, and whether one more
piece may join the engine's batch.

The rule is the listener's: speech that has started must never wait for audio. A stream synthesised at
rtf (synthesis time / audio time) > 1 falls behind by 1 - 1/rtf of every second it plays, so a play
starts once that share of all it will say is in hand; faster than real time, once the later sentences'
waits for their prefills are; and always one codec chunk's wait besides. And a piece beyond the one that
plays next joins the batch only while every stream would still run faster than real time with it: the
engine's steps are shared, so on a machine that synthesises one stream at about real time, a sentence
synthesised ahead slowed the one being waited for and the first words came seconds later
(docs/announcer.md).
"""

from __future__ import annotations

import numpy as np

from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.engine.stats import EngineStats

FRAME_S = 0.08  # audio per frame of the 12.5 Hz codec


def jitter_threshold(
    jitter_buffer_ms: int, expected_duration_s: float | None, rtf: float | None, waits_s: float = 0.0,
    chunk_gap_s: float = 0.0,
) -> int:  # fmt: skip
    """Samples to buffer before speech starts: max(jitter_buffer_ms, shortfall + chunk_gap_s), the
    shortfall expected * (1 - 1/rtf) + waits / rtf at rtf >= 1, the waits themselves below it.

    rtf = synthesis time / audio time. A T-second play whose rest takes rtf * (T - B) + waits to
    synthesise (`waits_s`: the sentences not started yet, each waiting for its prompt's prefill before
    its first audio) plays without a stall if that is no longer than T, i.e. with B = T * (1 - 1/rtf) +
    waits / rtf seconds in hand at the start. That holds at the end of the play, which is the worst
    moment only for a stream slower than real time; a faster one gets ahead over the whole play, but the
    next sentence's wait comes after the first sentence, before it has: the waits are held in full (with
    the end's sum, a stream a little faster than real time counted its lead over the whole play against
    the prefills and ran dry at sentence boundaries, docs/benchmarks.md). And audio comes a codec chunk
    at a time (12 frames, about a second of speech, by default), so the buffer also holds the wait
    between two chunks (`chunk_gap_s`, as measured). Unknown rtf or duration -> just jitter_buffer_ms.
    """
    floor = jitter_buffer_ms * MODEL_RATE // 1000
    if not expected_duration_s or not rtf or rtf <= 0:
        return floor
    slow = rtf >= 1.0
    shortfall = expected_duration_s * (1.0 - 1.0 / rtf) + waits_s / rtf if slow else waits_s
    return max(floor, int(np.ceil((shortfall + chunk_gap_s) * MODEL_RATE)))


def chunk_gap(average: float | None, last_at: float | None, now: float) -> tuple[float | None, float]:
    """(the running wait between two PCM chunks of a piece, `now` as its latest arrival): one more sample
    when the piece had PCM before (`last_at`); its first PCM waited on its prefill, measured apart."""
    return (average if last_at is None else ewma(average, now - last_at)), now


def stream_rtf(stats: EngineStats, measured: float | None) -> float | None:
    """Synthesis time / audio time of one stream now: from the engine's rate while it steps, else its
    rate over the last seconds (which counts the idle time before a request: it errs slow), else
    `measured` (the last pieces' own figure) when nothing runs."""
    rate = _throughput(stats)
    return stats.num_running / (rate * FRAME_S) if rate else measured


def rtf_with(streams: int, stats: EngineStats, measured: float | None) -> float | None:
    """One stream's rtf if `streams` ran at once, on the engine's throughput as measured: a step is taken
    to grow with the batch (it grows less on most CPUs, so this errs on the side of the piece playing)."""
    rate = _throughput(stats)
    if rate:
        return streams / (rate * FRAME_S)
    return None if measured is None else measured * streams


def _throughput(stats: EngineStats) -> float:
    """The engine's frames per second while requests run (0: nothing runs or nothing measured)."""
    if stats.num_running <= 0:
        return 0.0
    return stats.decode_frames_per_second or stats.frames_per_second


def may_join(streams: int, stats: EngineStats, measured: float | None) -> bool:
    """Whether one more piece may join `streams` running ones: only while every stream would still run
    faster than real time (no figure yet: not until one is measured)."""
    rtf = rtf_with(streams + 1, stats, measured)
    return rtf is not None and rtf < 1.0


def slower(*rtfs: float | None) -> float | None:
    """The largest of the figures known: the stream's rate now and whole sentences as measured, as the
    first steps of a stream have not yet paid for a codec chunk (12 frames' decode in one step)."""
    return max((rtf for rtf in rtfs if rtf is not None), default=None)


def ewma(average: float | None, sample: float) -> float:
    """The running figure after one more sample (the last few sentences weigh most)."""
    return sample if average is None else 0.7 * average + 0.3 * sample
