"""BlockManager: exact block ids, on-demand growth, FIFO reuse and accounting back to zero."""

import numpy as np
import pytest

from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import SamplingParams
from qwen3tts.engine.sequence import Prompt, Request, Sequence


def make_seq(name: str, prompt_len: int = 1) -> Sequence:
    prompt = Prompt(
        np.zeros((prompt_len, 2), np.float32), np.zeros((0, 2), np.float32), np.zeros(2, np.float32)
    )
    return Sequence(Request(name, "text"), prompt, SamplingParams(), max_frames=100)


def test_allocation_takes_the_lowest_free_ids_in_order_and_only_as_positions_grow():
    bm = BlockManager(num_blocks=6, block_size=4)
    a, b = make_seq("a"), make_seq("b")
    bm.allocate(a, 5)  # 5 positions need 2 blocks
    bm.allocate(b, 3)
    assert (a.block_table, b.block_table) == ([0, 1], [2])
    bm.allocate(a, 8)  # still fits in 2 blocks: nothing new
    assert a.block_table == [0, 1]
    bm.allocate(a, 9)  # position 8 opens a third block, the next free id
    assert a.block_table == [0, 1, 3]
    assert (bm.num_used_blocks, bm.num_free_blocks) == (4, 2)


def test_can_allocate_counts_only_the_missing_blocks():
    bm = BlockManager(num_blocks=3, block_size=4)
    a, b = make_seq("a"), make_seq("b")
    bm.allocate(a, 8)  # a holds [0, 1]; one block left
    assert bm.can_allocate(a, 12)  # a needs one more
    assert not bm.can_allocate(a, 13)  # a would need two more
    assert bm.can_allocate(b, 4) and not bm.can_allocate(b, 5)
    assert bm.num_missing_blocks(a, 13) == 2


def test_allocating_beyond_the_pool_raises_without_touching_the_table():
    bm = BlockManager(num_blocks=2, block_size=4)
    a = make_seq("a")
    with pytest.raises(RuntimeError, match="needs 3 blocks"):
        bm.allocate(a, 12)
    assert a.block_table == [] and bm.num_free_blocks == 2


def test_freed_blocks_join_the_back_of_the_free_list_in_table_order():
    bm = BlockManager(num_blocks=5, block_size=4)
    a, b, c = make_seq("a"), make_seq("b"), make_seq("c")
    bm.allocate(a, 8)  # a [0, 1]
    bm.allocate(b, 4)  # b [2]; free list now [3, 4]
    bm.free(a)  # free list [3, 4, 0, 1]
    assert a.block_table == []
    bm.allocate(c, 16)
    assert c.block_table == [3, 4, 0, 1]
    bm.free(b)
    bm.free(c)
    assert (bm.num_used_blocks, bm.num_free_blocks) == (0, 5)


def test_freeing_a_sequence_without_blocks_is_harmless():
    bm = BlockManager(num_blocks=2, block_size=4)
    bm.free(make_seq("a"))
    assert bm.num_free_blocks == 2


@pytest.mark.parametrize("args", [(0, 4), (4, 0)])
def test_an_empty_pool_or_block_is_rejected(args):
    with pytest.raises(ValueError):
        BlockManager(*args)
