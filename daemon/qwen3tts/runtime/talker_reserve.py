"""The paged talker's working memory taken at load, for the largest steps the engine will ask of it.

The CPU plugin sizes the talker's intermediate buffers (PagedAttention's scratch among them) to the
largest step it has run and keeps them: more new positions in one step, and positions attending over a
longer past, each grow them once. Under a daemon's traffic such a step is a rare coincidence (several
prompts prefilling at once), so RSS rose in steps of several MiB hours into a soak, read as a leak
(issue 37; docs/benchmarks.md, "Flat memory"). One step of each largest kind on the engine's own infer
request at load takes that memory then, and later steps within these limits take no more:

- the whole step budget (`max_num_batched_tokens`) spread over `max_num_seqs` prompts, each prefilling
  after a past of one step budget (the second chunk of a prompt twice that long);
- one such prompt taking the budget beside `max_num_seqs` - 1 decode rows after the longest past a
  request reaches (a step budget + `max_frames`): the step's longest context sizes the attention scratch
  of every new position in it;
- `max_num_seqs` of those decode rows alone (steps of decode rows only have buffers of their own).

With the 0.6B model and the default limits that is ~90 MiB and ~4 s of a 2-vCPU machine's start
(docs/benchmarks.md), what its RSS reached anyway the first time four prompts met in one step.

Everything is capped by the KV cache's blocks. A longer prompt or a bigger pool may still grow the
buffers once more later, bounded by these settings. The steps write into free KV blocks only: the
block manager owns no block yet and hashes none, so nothing later reads what they wrote.
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
    steps = [
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


def reserve(talker: PagedTalker, hidden_size: int, steps: Sequence[Sequence[Shape]]) -> None:
    """Run `steps` (from reserve_shapes) on `talker` with zero embeddings."""
    for step in steps:
        seqs, first_block = [], 0
        for new, past in step:
            blocks = talker.blocks_needed(new + past)
            table = list(range(first_block, first_block + blocks))
            seqs.append((np.zeros((new, hidden_size), dtype=np.float32), past, table))
            first_block += blocks
        talker.step(seqs)
