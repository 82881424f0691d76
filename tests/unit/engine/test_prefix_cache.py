"""The content keys of prefix caching (engine/prefix_cache.py): a block's key changes with any bit of
its rows, their shape or type, or any earlier block, and a sequence's keys are computed once. How the
block manager shares blocks by these keys is test_prefix_caching.py."""

import numpy as np

from qwen3tts.engine.config import SamplingParams
from qwen3tts.engine.prefix_cache import ROOT_HASH, block_hash, full_block_hashes
from qwen3tts.engine.sequence import Prompt, Request, Sequence

ROWS = np.arange(8, dtype=np.float32).reshape(4, 2)


def sequence(embeddings: np.ndarray) -> Sequence:
    width = embeddings.shape[1]
    prompt = Prompt(embeddings, np.zeros((0, width), np.float32), np.zeros(width, np.float32))
    return Sequence(Request("a", "hello"), prompt, SamplingParams(), max_frames=10)


def test_equal_rows_after_equal_blocks_have_equal_keys():
    assert block_hash(ROOT_HASH, ROWS) == block_hash(ROOT_HASH, ROWS.copy())
    assert len(block_hash(ROOT_HASH, ROWS)) == 32  # a SHA-256 digest


def test_one_changed_value_changes_the_key():
    other = ROWS.copy()
    other[3, 1] = np.nextafter(other[3, 1], np.float32(100))
    assert block_hash(ROOT_HASH, other) != block_hash(ROOT_HASH, ROWS)


def test_minus_zero_is_a_miss_not_a_wrong_hit():
    zeros = np.zeros((4, 2), np.float32)
    assert block_hash(ROOT_HASH, -zeros) != block_hash(ROOT_HASH, zeros)


def test_the_same_bytes_in_another_shape_or_type_have_another_key():
    assert block_hash(ROOT_HASH, ROWS.reshape(2, 4)) != block_hash(ROOT_HASH, ROWS)
    as_ints = ROWS.view(np.int32)  # bit-identical bytes, another dtype
    assert block_hash(ROOT_HASH, as_ints) != block_hash(ROOT_HASH, ROWS)


def test_a_blocks_key_depends_on_the_block_before_it():
    first = block_hash(ROOT_HASH, ROWS)
    assert block_hash(first, ROWS) != block_hash(ROOT_HASH, ROWS)


def test_a_sequences_keys_chain_its_blocks_and_stop_at_the_blocks_asked_for():
    rows = np.arange(24, dtype=np.float32).reshape(12, 2)  # three blocks of 4 positions
    seq = sequence(rows)
    keys = full_block_hashes(seq, num_blocks=2, block_size=4)
    first = block_hash(ROOT_HASH, rows[0:4])
    assert keys == [first, block_hash(first, rows[4:8])]


def test_two_sequences_share_keys_up_to_the_first_differing_block():
    rows = np.arange(24, dtype=np.float32).reshape(12, 2)
    other = rows.copy()
    other[9] = -1  # only the third block differs
    a = full_block_hashes(sequence(rows), 3, 4)
    b = full_block_hashes(sequence(other), 3, 4)
    assert a[:2] == b[:2] and a[2] != b[2]


def test_keys_are_memoised_on_the_sequence_and_only_new_blocks_are_hashed():
    rows = np.arange(24, dtype=np.float32).reshape(12, 2)
    seq = sequence(rows)
    one = full_block_hashes(seq, 1, 4)
    seq.block_hashes[0] = b"memo"  # a recomputation would overwrite this
    keys = full_block_hashes(seq, 3, 4)
    assert one != [b"memo"] and keys[0] == b"memo"
    assert keys[1] == block_hash(b"memo", rows[4:8])  # the new block chains on the memoised key
    assert full_block_hashes(seq, 2, 4) == keys[:2] and len(seq.block_hashes) == 3
