"""Paged KV blocks: which physical cache blocks each sequence owns, and which ones it shares.

Blocks are handed out on demand, as a sequence's positions grow, never reserved for the worst case.
The free list is a FIFO: allocation takes from the front, freed blocks join the back. That keeps the
ids deterministic (tests assert them) and spreads reuse over the KV cache.

Prefix caching (vLLM's automatic prefix caching, `enable_prefix_caching`): a FULL block whose positions
are computed is registered under its content key (prefix_cache.py: the chained hash of its rows). A
sequence being admitted first looks its own full blocks up, in order, and shares every hit: the block's
refcount goes up and prefill starts after the hits. A block whose refcount drops to zero goes back to
the free list but keeps its key, so it can still be hit until allocation reaches it at the front of the
list and evicts it: the free list is also the LRU order of the cached blocks. A sequence's blocks are
freed last block first, so the start of a chain, shared by the most prompts, is evicted last.
Shared blocks are never written: a sequence only computes positions after its hits, in its own blocks.
"""

from __future__ import annotations

from collections import OrderedDict

from qwen3tts.engine.prefix_cache import full_block_hashes
from qwen3tts.engine.sequence import Sequence


class BlockManager:
    """A KV cache of `num_blocks` blocks of `block_size` positions each."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = False):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self._free_block_ids: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self.ref_counts = [0] * num_blocks
        self._cached_block_ids: dict[bytes, int] = {}  # content key -> block holding those K/V
        self._block_keys: dict[int, bytes] = {}  # the reverse, for eviction
        self.num_prefix_queried_tokens = 0  # known positions of admitted sequences (prefix caching on)
        self.num_prefix_hit_tokens = 0  # ... of which were found computed in the cache

    @property
    def num_free_blocks(self) -> int:
        """Blocks no sequence holds (cached ones included: they are evicted when needed)."""
        return len(self._free_block_ids)

    @property
    def num_used_blocks(self) -> int:
        return self.num_blocks - len(self._free_block_ids)

    @property
    def num_cached_blocks(self) -> int:
        """Blocks registered under a content key, held or free."""
        return len(self._cached_block_ids)

    @property
    def free_block_ids(self) -> list[int]:
        """The free list, front (next to allocate, evicted first) to back."""
        return list(self._free_block_ids)

    def block_key(self, block_id: int) -> bytes | None:
        return self._block_keys.get(block_id)

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
        for _ in range(missing):
            block_id, _ = self._free_block_ids.popitem(last=False)
            self._evict(block_id)
            self.ref_counts[block_id] = 1
            seq.block_table.append(block_id)

    def free(self, seq: Sequence) -> None:
        """Drop `seq`'s hold on its blocks (finish, cancel, error or preemption).

        A block nobody else holds joins the back of the free list; with prefix caching it keeps its
        key (reusable until evicted) and the table is released last block first.
        """
        table = reversed(seq.block_table) if self.enable_prefix_caching else seq.block_table
        for block_id in table:
            self.ref_counts[block_id] -= 1
            if self.ref_counts[block_id] == 0:
                self._free_block_ids[block_id] = None
        seq.block_table = []
        seq.num_keyed_blocks = 0

    # ---- prefix caching ----

    def allocate_cached_prefix(self, seq: Sequence) -> int:
        """Share the cached blocks of `seq`'s known prefix; returns the positions it no longer computes.

        Only for a sequence that holds no block (admission, or re-admission after a preemption).
        At least the newest position is always left to compute: its logits pick the next code.
        """
        if not self.enable_prefix_caching or seq.block_table or seq.num_computed_tokens:
            return 0
        max_blocks = (seq.num_tokens - 1) // self.block_size
        self.num_prefix_queried_tokens += seq.num_tokens
        for key in full_block_hashes(seq, max_blocks, self.block_size):
            block_id = self._cached_block_ids.get(key)
            if block_id is None:
                break  # the chain is broken: no later block can match either
            if self.ref_counts[block_id] == 0:
                del self._free_block_ids[block_id]
            self.ref_counts[block_id] += 1
            seq.block_table.append(block_id)
        seq.num_computed_tokens = len(seq.block_table) * self.block_size
        seq.num_keyed_blocks = len(seq.block_table)
        self.num_prefix_hit_tokens += seq.num_computed_tokens
        return seq.num_computed_tokens

    def undo_cached_prefix(self, seq: Sequence) -> None:
        """Give back the hits of an admission that did not get its other blocks: it waits holding nothing."""
        self.num_prefix_queried_tokens -= seq.num_tokens if self.enable_prefix_caching else 0
        self.num_prefix_hit_tokens -= seq.num_computed_tokens
        self.free(seq)
        seq.num_computed_tokens = 0

    def cache_computed_blocks(self, seq: Sequence) -> None:
        """Register `seq`'s full, computed blocks under their content keys (once each).

        When another block already holds the same key (two sequences prefilled the same prefix in the
        same step), the first one stays the cached copy and this one stays private.
        """
        if not self.enable_prefix_caching:
            return
        num_full = min(seq.num_computed_tokens // self.block_size, len(seq.block_table))
        keys = full_block_hashes(seq, num_full, self.block_size)
        for i in range(seq.num_keyed_blocks, num_full):
            block_id, key = seq.block_table[i], keys[i]
            if block_id not in self._block_keys and key not in self._cached_block_ids:
                self._cached_block_ids[key] = block_id
                self._block_keys[block_id] = key
        seq.num_keyed_blocks = max(seq.num_keyed_blocks, num_full)

    def _evict(self, block_id: int) -> None:
        key = self._block_keys.pop(block_id, None)
        if key is not None:
            del self._cached_block_ids[key]
