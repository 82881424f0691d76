"""Paged KV blocks: which physical cache blocks each sequence owns.

Blocks are handed out on demand, as a sequence's positions grow, never reserved for the worst case.
The free list is a FIFO: allocation takes from the front, freed blocks join the back in block-table
order. That keeps the ids deterministic (tests assert them) and spreads reuse over the pool.
"""

from __future__ import annotations

from collections import deque

from qwen3tts.engine.sequence import Sequence


class BlockManager:
    """A pool of `num_blocks` KV blocks of `block_size` positions each."""

    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free_block_ids: deque[int] = deque(range(num_blocks))

    @property
    def num_free_blocks(self) -> int:
        return len(self._free_block_ids)

    @property
    def num_used_blocks(self) -> int:
        return self.num_blocks - len(self._free_block_ids)

    def blocks_for(self, num_tokens: int) -> int:
        """Blocks that hold `num_tokens` positions."""
        return -(-num_tokens // self.block_size)

    def num_missing_blocks(self, seq: Sequence, num_tokens: int) -> int:
        """Blocks `seq` still needs so that its table covers positions [0, num_tokens)."""
        return max(0, self.blocks_for(num_tokens) - len(seq.block_table))

    def can_allocate(self, seq: Sequence, num_tokens: int) -> bool:
        return self.num_missing_blocks(seq, num_tokens) <= self.num_free_blocks

    def allocate(self, seq: Sequence, num_tokens: int) -> None:
        """Grow `seq.block_table` to cover positions [0, num_tokens); call can_allocate() first."""
        missing = self.num_missing_blocks(seq, num_tokens)
        if missing > self.num_free_blocks:
            raise RuntimeError(f"{seq!r} needs {missing} blocks, only {self.num_free_blocks} free")
        seq.block_table.extend(self._free_block_ids.popleft() for _ in range(missing))

    def free(self, seq: Sequence) -> None:
        """Return all of `seq`'s blocks to the pool (finish, cancel, error or preemption)."""
        self._free_block_ids.extend(seq.block_table)
        seq.block_table = []
