"""Which steps the talker's reservation runs at load (runtime/talker_reserve.py), without OpenVINO."""

from __future__ import annotations

import pytest

from qwen3tts.runtime.talker_reserve import reserve_shapes

BLOCK = 32


def _blocks(new: int, past: int) -> int:
    return -(-(new + past) // BLOCK)


@pytest.mark.parametrize(
    "seqs, budget, frames, blocks",
    [(4, 256, 2048, 126), (4, 256, 24, 516), (1, 256, 2048, 126), (8, 64, 100, 20), (4, 16, 2048, 3)],
)
def test_every_step_fits_the_budget_and_the_cache(seqs, budget, frames, blocks):
    for step in reserve_shapes(seqs, budget, frames, blocks, BLOCK):
        assert 1 <= len(step) <= seqs
        assert sum(new for new, _ in step) <= budget
        assert sum(_blocks(new, past) for new, past in step) <= blocks  # disjoint tables in the cache
        assert all(new >= 1 and past >= 0 for new, past in step)


def test_the_largest_step_of_each_kind_at_the_daemons_limits():
    steps = reserve_shapes(4, 256, 24, 516, BLOCK)

    *ladder, spread, mixed, decodes = steps
    assert ladder == [[(n, 0)] for n in (2, 4, 8, 16, 32, 64, 128)]  # each kernel size once
    assert spread == [(64, 256)] * 4  # the budget over every sequence, after a past of one budget
    assert mixed == [(253, 256)] + [(1, 256 + 24)] * 3  # one prompt beside the longest decodes
    assert decodes == [(1, 256 + 24)] * 4


def test_the_longest_past_is_cut_to_a_sequences_share_of_the_cache():
    steps = reserve_shapes(4, 256, 2048, 126, BLOCK)  # the 0.6B bundle's default pool: 126 blocks

    share = (126 // 4) * BLOCK
    assert steps[-1] == [(1, share - 1)] * 4
    assert max(new + past for step in steps for new, past in step) == share


def test_one_sequence_runs_each_kind_once():
    steps = reserve_shapes(1, 128, 100, 50, BLOCK)

    assert steps == [*([(n, 0)] for n in (2, 4, 8, 16, 32, 64)), [(128, 128)], [(1, 228)]]
