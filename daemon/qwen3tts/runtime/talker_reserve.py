"""The paged talker's working memory taken at load, for every kind of step the engine will ask of it.

The CPU plugin picks the talker's matrix kernels by the number of new positions in a step and sizes its
buffers (PagedAttention's scratch among them) to the largest step it has run, and keeps both. Measured
with the 0.6B INT8 talker on an AVX2 machine (AMD Zen 3): a step of 8-127 positions makes the plugin pack a
second copy of weights (+146 MiB, read from the weight file the warm-up had released), one of 128 or
more +53 MiB, and longer pasts and more sequences grow the scratch. Under a daemon's traffic such steps
are coincidences (several prompts prefilling at once), so RSS rose in steps of MiBs to hundreds of MiB
hours after start: read as a leak in a soak (docs/benchmarks.md, "Flat memory"), and a step's repacking
paid by the request that made it. So at load the engine's own infer request runs, capped by the KV
cache's blocks:

- one prompt of each power of two of new positions below the step budget (`max_num_batched_tokens`):
  whatever sizes the plugin's kernels change at on this CPU, each kind runs once;
- the budget spread over `max_num_seqs` prompts, each after a past of one budget (the second chunk of a
  prompt twice that long);
- one prompt taking the budget beside `max_num_seqs` - 1 decode rows after the longest past a request
  reaches (a budget + `max_frames`): the step's longest context sizes the attention scratch of every
  new position in it;
- `max_num_seqs` of those decode rows alone (steps of decode rows only have buffers of their own).

Later steps within these limits take no more (tests/integration/runtime/test_talker_reserve.py). The
weight file's pages are released again afterwards (runtime/warm_up.py `settle`). A longer prompt or
bigger limits may still grow the buffers once more, bounded by them. The steps write into free KV
blocks only: the block manager owns and hashes none yet, so nothing later reads what they wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qwen3tts.runtime.paged_talker import PagedTalker

# (new positions, past positions) per sequence of one step
Shape = tuple[int, int]


def reserve_shapes(
    max_num_seqs: int, max_num_batched_tokens: int, max_frames: int, num_blocks: int, block_size: int
) -> list[list[Shape]]:
    """The steps to run, largest of each kind, each fitting the cache (sequences get disjoint blocks)."""
    seqs, budget = max(1, min(max_num_seqs, max_num_batched_tokens, num_blocks)), max_num_batched_tokens
    per_seq_positions = (num_blocks // seqs) * block_size  # what one of `seqs` sequences may hold
    spread = [budget // seqs + (1 if i < budget % seqs else 0) for i in range(seqs)]
    longest_decode = _fitted(1, budget + max_frames, per_seq_positions)
    whole_cache = num_blocks * block_size
    ladder = [1 << k for k in range(1, (budget - 1).bit_length())]  # 2, 4, ... below the budget
    steps = [
        *([_fitted(n, 0, whole_cache)] for n in ladder),  # the budget itself: the next two
        [_fitted(n, budget, per_seq_positions) for n in spread],
        # a prompt's whole share of the budget beside the others' longest decodes: the step's longest
        # context sizes the attention scratch of all its new positions
        [_fitted(budget - (seqs - 1), budget, per_seq_positions)] + [longest_decode] * (seqs - 1),
        [longest_decode] * seqs,  # steps of decode rows only take buffers of their own
    ]
    unique: list[list[Shape]] = []
    for step in steps:
        if step not in unique:
            unique.append(step)
    return unique


def _fitted(new: int, past: int, positions: int) -> Shape:
    """(new, past) with new + past <= positions, keeping the new positions first."""
    new = max(1, min(new, positions))
    return new, max(0, min(past, positions - new))


def reserve(talker: PagedTalker, hidden_size: int, steps: Sequence[Sequence[Shape]]) -> str:
    """Run `steps` (from reserve_shapes) on `talker` with zero embeddings; a note for the log line."""
    for step in steps:
        seqs, first_block = [], 0
        for new, past in step:
            blocks = talker.blocks_needed(new + past)
            table = list(range(first_block, first_block + blocks))
            seqs.append((np.zeros((new, hidden_size), dtype=np.float32), past, table))
            first_block += blocks
        talker.step(seqs)
    largest = max(sum(new for new, _ in step) for step in steps)
    return f"{len(steps)} steps of up to {largest} positions run for their buffers"
