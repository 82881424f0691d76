"""The paged talker takes the memory of the largest steps at load (runtime/talker_reserve.py).

The CPU plugin grows the talker's buffers to the largest step it has run and keeps them; without the
reservation, steps the engine can make (several prompts at once, a prompt beside long decodes) took
MiBs hours into a soak. After load, steps of any shape within the engine's limits take no more live
memory (glibc's, mallinfo2, as scripts/measure_tie_fallback_memory.py reads it): allocations, never times.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from script_modules import script

from qwen3tts.runtime import ov_runner
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.ov_runner import OVRunner
from qwen3tts.settings_loader import load_settings

live = script("measure_tie_fallback_memory").live
SEQS, BUDGET, FRAMES, BLOCKS = 4, 128, 200, 64
SETTINGS = [
    "devices.talker=[CPU]",
    "devices.codec=[CPU]",
    "devices.native_talker=never",  # the plugin's paged talker
    f"engine.max_num_seqs={SEQS}",
    f"engine.max_num_batched_tokens={BUDGET}",
    f"engine.max_frames={FRAMES}",
    f"engine.num_kv_blocks={BLOCKS}",
]
# Far less than what the steps below took without the reservation (the verdict's other side, checked
# by the last test), more than the plugin's own bookkeeping of new shapes
SMALL = 1 << 20


def _steps(count: int, seed: int) -> list[list[tuple[int, int]]]:
    """Steps the engine can schedule: at most SEQS sequences and BUDGET new positions, a prompt's chunk
    after at most one budget of its own past, a decode row after at most its prompt and FRAMES."""
    rng, share = random.Random(seed), (BLOCKS // SEQS) * 32
    steps = []
    for _ in range(count):
        left, step = BUDGET, []
        for i in range(rng.randint(1, SEQS)):
            prompt = rng.random() < 0.4 and left > SEQS
            new = rng.randint(2, left - (SEQS - i - 1)) if prompt else 1
            past = rng.randint(0, BUDGET) if prompt else rng.randint(0, BUDGET + FRAMES)
            step.append((new, min(past, share - new)))
            left -= new
        steps.append(step)
    return steps


def _gain(runner: OVRunner, steps) -> int:
    talker, hidden, size = runner._talker, runner.hidden_size, runner.block_size
    talker.step([(np.zeros((1, hidden), np.float32), 0, [0])])  # the request's own first inference
    before = live()
    for step in steps:
        seqs, first = [], 0
        for new, past in step:
            blocks = -(-(new + past) // size)
            seqs.append((np.ones((new, hidden), np.float32), past, list(range(first, first + blocks))))
            first += blocks
        talker.step(seqs)
    return live() - before


@pytest.mark.parametrize("seed", [1, 2])
def test_after_load_steps_within_the_engines_limits_take_no_more_memory(tiny_models, seed):
    runtime = load_runtime(tiny_models.bundle(), load_settings(None, SETTINGS))

    gain = _gain(runtime.runner, _steps(120, seed))

    assert gain < SMALL, gain  # 78-95 KB here


def test_without_the_reservation_the_same_steps_take_megabytes(tiny_models, monkeypatch):
    # the load's one warm-up position alone, as before the reservation
    monkeypatch.setattr(ov_runner, "reserve_shapes", lambda *limits: [[(1, 0)]])
    runtime = load_runtime(tiny_models.bundle(), load_settings(None, SETTINGS))

    gain = _gain(runtime.runner, _steps(120, 1))

    assert gain > SMALL, gain  # 2.4 MB here
