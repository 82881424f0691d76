"""What the engine reports about itself: `EngineStats`, and the meter of frames per decode step.

The meter keeps one window of (time, frames) per step: frames per second over the last
FPS_WINDOW_S seconds (as of the last step), and the mean batch — requests per decode step that
produced frames — over the last BATCH_WINDOW_S seconds, the figure an operator watches to see it batch.
Beside the first, the rate while it steps (decode_frames_per_second): the same window's frames over the
time from its first step to its last, less the time the engine sat idle between two steps, so that the
idle time before a request arrived does not count. The announcer paces playback by it: over a wall-clock
window a stream that has just started looks several times slower than it runs, and the first words
waited for audio they did not need (also when the window still held the steps of a request that ended
a second before: a 0.6B stream faster than real time was told at 3-4 frames per second for half a
second, and its start threshold at 7 s of audio).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

FPS_WINDOW_S = 2.0
BATCH_WINDOW_S = 60.0
DECODE_RATE_STEPS = 4  # steps in the window before the rate while stepping is told (one is no rate)
IDLE_GAP_S = 0.1  # between one step's end and the next one's start: idle (the loop's own work takes ~1 ms)


@dataclass(frozen=True)
class EngineStats:
    num_running: int
    num_waiting: int  # including submitted requests the loop has not picked up yet
    num_kv_blocks_used: int
    num_kv_blocks_free: int
    frames_per_second: float  # frames generated over the last FPS_WINDOW_S seconds, all requests
    max_batch: int
    num_preemptions: int
    num_steps: int = 0  # steps that produced frames, since start
    num_frames: int = 0  # frames produced, since start: num_frames / num_steps is the mean batch
    mean_batch: float = 0.0
    """Mean requests per decode step (steps that produced frames) over the last BATCH_WINDOW_S seconds."""
    num_cached_blocks: int = 0
    """KV blocks registered in the prefix cache (shared or free but still hittable)."""
    prefix_queried_tokens: int = 0
    """Prompt positions of admitted requests looked up in the prefix cache, since start."""
    prefix_hit_tokens: int = 0
    """... of which were found computed and shared instead of prefilled."""
    num_frame_capped: int = 0
    """Requests stopped by their frame cap (max_frames) instead of end-of-speech, since start."""
    decode_frames_per_second: float = 0.0
    """Frames per second while the engine steps: the last FPS_WINDOW_S seconds' frames over the time
    from their first step to their last (idle time not counted); 0 until DECODE_RATE_STEPS steps."""


class StepMeter:
    """Counts frames per engine step; written by the step loop, read from any thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock  # the engine stamps each step's start by it
        # (end, frames, start) of each step over the last BATCH_WINDOW_S; start None where not told
        self._recent: deque[tuple[float, int, float | None]] = deque()
        self.frames_per_second = 0.0
        self.decode_frames_per_second = 0.0
        self.num_steps = 0
        self.num_frames = 0

    def count(self, num_frames: int, started: float | None = None) -> None:
        """One step that produced `num_frames` frames (0 for a prefill-only step), begun at `started`
        (the clock's time; None: not told, the step is taken to follow the one before at once)."""
        now = self.clock()
        if num_frames:
            self.num_steps += 1
            self.num_frames += num_frames
        self._recent.append((now, num_frames, started))
        while self._recent and self._recent[0][0] < now - BATCH_WINDOW_S:
            self._recent.popleft()
        # the last FPS_WINDOW_S from the newest step back (not the minute the mean batch keeps: every step)
        frames, steps, span, first = 0, 0, 0.0, (now, 0, None)
        for step in reversed(self._recent):
            if step[0] < now - FPS_WINDOW_S:
                break
            if steps:
                span += _stepping(first, step[0])
            frames, steps, first = frames + step[1], steps + 1, step
        self.frames_per_second = frames / FPS_WINDOW_S
        # each step is stamped when it ends: the first one's frames were made before the span begins
        stepped = steps >= DECODE_RATE_STEPS and span > 0
        self.decode_frames_per_second = (frames - first[1]) / span if stepped else 0.0

    def mean_batch(self) -> float:
        steps = list(self._recent)  # read from any thread: a copy, not the live deque
        horizon = self.clock() - BATCH_WINDOW_S
        recent = [n for t, n, _ in steps if t >= horizon and n]
        return sum(recent) / len(recent) if recent else 0.0


def _stepping(step: tuple[float, int, float | None], previous_end: float) -> float:
    """The time from the step before's end to `step`'s end the engine spent stepping: all of it, unless
    `step` began more than IDLE_GAP_S after it (the engine sat idle meanwhile), then its own duration."""
    end, _, started = step
    if started is not None and started - previous_end > IDLE_GAP_S:
        return end - started
    return end - previous_end
