"""Feeds a PagedAttention talker (model/graphs/talker.py `to_paged`) from per-sequence block tables.

The scheduler and block manager (engine/) decide which sequences run and which physical KV blocks they
own; this class only turns that into the 7 index tensors of the paged model, runs one step and returns
each sequence's last-token rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openvino as ov

from qwen3tts.model.graphs.talker import INPUTS_EMBEDS, LAST_HIDDEN_STATE, LOGITS, POSITION_IDS

KEY_CACHE = "key_cache."
VALUE_CACHE = "value_cache."

# One sequence in a step: (new token embeddings [n, hidden], tokens already cached, physical block ids).
SeqStep = tuple[np.ndarray, int, Sequence[int]]

# Steps of more new positions than this are padded up to a multiple of it. The CPU plugin keeps memory
# for every number of new positions it has run a step with (measured with the 0.6B INT8 talker: ~0.4-0.6
# MiB each, kept for good; up to max_num_batched_tokens of them), so the daemon's RSS crept up for as
# long as traffic brought new step sizes. Padded, a budget of 256 has at most 8 + 31 sizes. The padding
# is one more sequence of zeros in a block of its own, beyond the engine's pool; its rows are dropped.
# It costs at most PAD_TO - 1 positions of compute in a step that prefills (docs/benchmarks.md).
PAD_TO = 8


def _cache_shape(port: ov.ConstOutput, num_blocks: int) -> list[int]:
    """[num_blocks, ...] with the plugin-fixed trailing dims of a compiled key/value cache input."""
    dims = list(port.get_partial_shape())[1:]
    if not all(d.is_static for d in dims):
        raise ValueError(f"{port.get_any_name()} has dynamic trailing dims; compile the paged model first")
    return [num_blocks] + [d.get_length() for d in dims]


class PagedTalker:
    """One infer request on a compiled paged talker, with KV caches of `num_blocks` blocks per layer.

    `block_size` comes from the compiled `value_cache.0` shape [blocks, kv_heads, block_size, ...]: the
    value cache is always quantized per token (scale/zero point appended to the last axis), whereas a
    by-channel quantized key cache carries extra rows on axis 2 (u8 key: [blocks, kvh, 32 + 8, D]).
    """

    def __init__(self, compiled_model: ov.CompiledModel, num_blocks: int):
        if num_blocks < 1:
            raise ValueError(f"num_blocks must be >= 1, got {num_blocks}")
        self.num_blocks = num_blocks  # the engine's; block id num_blocks is the padding's (PAD_TO)
        self._request = compiled_model.create_infer_request()
        self.cache_bytes = 0
        block_sizes = set()
        for port in compiled_model.inputs:
            name = port.get_any_name()
            if not name.startswith((KEY_CACHE, VALUE_CACHE)):
                continue
            cache = ov.Tensor(port.get_element_type(), _cache_shape(port, num_blocks + 1))
            self._request.set_tensor(name, cache)  # set once: PagedAttention writes new K/V in place
            self.cache_bytes += cache.byte_size // (num_blocks + 1) * num_blocks  # the pool, not the padding
            if name.startswith(VALUE_CACHE):
                block_sizes.add(cache.shape[2])
        if len(block_sizes) != 1:
            raise ValueError(f"expected one block size across value caches, found {sorted(block_sizes)}")
        self.block_size = block_sizes.pop()
        if self.block_size < PAD_TO - 1:
            raise ValueError(f"block size {self.block_size} cannot hold a step's padding of {PAD_TO - 1}")

    def blocks_needed(self, num_tokens: int) -> int:
        """Blocks a sequence of `num_tokens` cached tokens occupies."""
        return -(-num_tokens // self.block_size)

    def step(self, seqs: Sequence[SeqStep]) -> tuple[np.ndarray, np.ndarray]:
        """Run one batched step; returns (logits [N, vocab], last_hidden_state [N, hidden]) of each
        sequence's last new token, in the order of `seqs`.

        Each block table must already hold the blocks for past_len + n tokens (the block manager
        allocates before scheduling). Token at position p is written to table[p // block_size].
        """
        if not seqs:
            raise ValueError("step() needs at least one sequence")
        count = sum(int(embeds.shape[0]) for embeds, _, _ in seqs)
        feed = self._feed(seqs, padded_positions(count) - count)
        for name, value in feed.items():
            # np.require keeps the 0-d max_context_len 0-d (np.ascontiguousarray would make it [1]).
            self._request.set_tensor(name, ov.Tensor(np.require(value, requirements="C"), shared_memory=True))
        self._request.infer()
        last_rows = feed["subsequence_begins"][1 : len(seqs) + 1] - 1  # the padding's row is not asked for
        logits = self._request.get_tensor(LOGITS).data  # [T, 1, vocab]
        hidden = self._request.get_tensor(LAST_HIDDEN_STATE).data  # [T, 1, hidden]
        return logits[last_rows, 0].copy(), hidden[last_rows, 0].copy()

    def _feed(self, seqs: Sequence[SeqStep], padding: int = 0) -> dict[str, np.ndarray]:
        """The 7 per-step inputs of the paged model; `padding` positions of zeros as one more sequence."""
        counts = [int(embeds.shape[0]) for embeds, _, _ in seqs]
        pasts = [int(past) for _, past, _ in seqs]
        if min(counts) < 1 or min(pasts) < 0:
            raise ValueError(f"each sequence needs >= 1 new token and past_len >= 0: {counts}, {pasts}")
        tables = [
            self._used_blocks(table, past + n) for (_, past, table), n in zip(seqs, counts, strict=True)
        ]
        if padding:
            seqs = [*seqs, (np.zeros((padding, seqs[0][0].shape[1]), np.float32), 0, [self.num_blocks])]
            counts, pasts = [*counts, padding], [*pasts, 0]
            tables.append(np.array([self.num_blocks], dtype=np.int32))
        ends = [past + count for past, count in zip(pasts, counts, strict=True)]
        positions = [np.arange(past, end, dtype=np.int64) for past, end in zip(pasts, ends, strict=True)]
        return {
            INPUTS_EMBEDS: np.concatenate([embeds for embeds, _, _ in seqs]).astype(np.float32, copy=False),
            POSITION_IDS: np.concatenate(positions),  # [T]
            "past_lens": np.array(pasts, dtype=np.int32),  # [N]
            "subsequence_begins": _prefix_sums(counts),  # [N+1]
            "block_indices": np.concatenate(tables),  # [total blocks]
            "block_indices_begins": _prefix_sums([len(t) for t in tables]),  # [N+1]
            "max_context_len": np.array(max(ends), dtype=np.int32),  # 0-d
        }

    def _used_blocks(self, table: Sequence[int], num_tokens: int) -> np.ndarray:
        """The first blocks of `table` that hold `num_tokens` tokens, validated."""
        needed = self.blocks_needed(num_tokens)
        if len(table) < needed:
            raise ValueError(f"block table {list(table)} too short for {num_tokens} tokens")
        used = np.asarray(table[:needed], dtype=np.int32)
        if used.size and (used.min() < 0 or used.max() >= self.num_blocks):
            raise ValueError(f"block table {list(table)} has ids outside 0..{self.num_blocks - 1}")
        return used


def _prefix_sums(counts: Sequence[int]) -> np.ndarray:
    """[0, c0, c0+c1, ...] as i32."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)


def padded_positions(count: int) -> int:
    """The positions a step of `count` new ones runs with: itself up to PAD_TO, else the next multiple."""
    return count if count <= PAD_TO else -(-count // PAD_TO) * PAD_TO
