"""Content hashes of full KV blocks, the keys of prefix caching (block_manager.py).

What identifies a talker position is exactly the row the talker reads there: the f32 embedding that
sums the text track and the codec track (voice, x-vector, reference codes and text all end up in it),
plus the position itself. The K/V of position p depend on nothing else than the rows 0..p, so a block's
key is the SHA-256 of its rows' bytes chained with the key of the block before it: two sequences get
the same key for block i only when all their rows up to the end of block i are bit-identical.
Token ids would not be enough (an x-vector row has no id) and a caller-supplied voice key could lie;
the rows cannot. Bit-identical means -0.0 and 0.0 differ: that is a miss, never a wrong hit.
"""

from __future__ import annotations

import hashlib

from qwen3tts.engine.sequence import Sequence

ROOT_HASH = b""  # the "previous block" of block 0


def block_hash(previous: bytes, rows) -> bytes:
    """Key of one full block: SHA-256 over the previous block's key, the row shape and the row bytes."""
    h = hashlib.sha256(previous)
    h.update(f"{rows.shape[0]}x{rows.shape[1]}:{rows.dtype.str}".encode())
    h.update(rows.tobytes())
    return h.digest()


def full_block_hashes(seq: Sequence, num_blocks: int, block_size: int) -> list[bytes]:
    """Keys of `seq`'s first `num_blocks` blocks (all positions known), memoised on the sequence.

    A sequence's rows never change once written, so the keys of its earlier blocks stay valid across
    preemption and recompute; only the new full blocks are hashed.
    """
    hashes = seq.block_hashes
    while len(hashes) < num_blocks:
        i = len(hashes)
        rows = seq.token_embeddings(i * block_size, (i + 1) * block_size)
        hashes.append(block_hash(hashes[-1] if hashes else ROOT_HASH, rows))
    return hashes[:num_blocks]
