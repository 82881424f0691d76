"""Prefix caching: exact block ids, refcounts, keys, LRU eviction and the scheduler's use of them.

Pools are tiny (blocks of 4 positions, rows of width 2). A "voice" is a run of identical leading rows,
as the same voice puts identical rows at the start of every prompt; the rest of each prompt differs.
"""

import numpy as np

from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import SamplingParams
from qwen3tts.engine.scheduler import Scheduler
from qwen3tts.engine.sequence import Prompt, Request, Sequence, SequenceStatus

H = 2
VOICE = np.arange(16 * H, dtype=np.float32).reshape(16, H)  # the shared leading rows


def make_seq(name: str, num_voice_rows: int, num_own_rows: int, urgent: bool = False) -> Sequence:
    """A prompt of `num_voice_rows` VOICE rows, then rows of its own (distinct per name)."""
    own = np.full((num_own_rows, H), -1.0 - sum(map(ord, name)), np.float32)
    prompt = Prompt(np.concatenate([VOICE[:num_voice_rows], own]), np.zeros((0, H), np.float32), np.zeros(H))
    return Sequence(
        Request(name, "text", rank=2 if urgent else 0, urgent=urgent),
        prompt,
        SamplingParams(),
        max_frames=100,
    )


def computed(bm: BlockManager, seq: Sequence, num_tokens: int) -> None:
    """Play the engine: allocate and compute positions up to `num_tokens`, then register full blocks."""
    bm.allocate(seq, num_tokens)
    seq.num_computed_tokens = num_tokens
    bm.cache_computed_blocks(seq)


def test_full_computed_blocks_are_shared_with_refcounts_and_freed_blocks_stay_cached():
    bm = BlockManager(num_blocks=6, block_size=4, enable_prefix_caching=True)
    a = make_seq("a", 10, 0)
    computed(bm, a, 10)  # a holds [0, 1, 2]; blocks 0 and 1 are full and keyed, block 2 (2 rows) is not
    assert a.block_table == [0, 1, 2]
    assert [bm.block_key(i) is not None for i in range(3)] == [True, True, False]
    assert bm.num_cached_blocks == 2

    b = make_seq("b", 8, 3)  # the same 8 voice rows, then 3 of its own: 11 positions
    assert bm.allocate_cached_prefix(b) == 8  # b shares blocks 0 and 1 and prefills from position 8
    assert (b.block_table, b.num_computed_tokens) == ([0, 1], 8)
    bm.allocate(b, 11)  # position 8 opens b's own block: the next free id
    assert b.block_table == [0, 1, 3]
    assert bm.ref_counts == [2, 2, 1, 1, 0, 0]
    assert (bm.num_prefix_queried_tokens, bm.num_prefix_hit_tokens) == (11, 8)

    bm.free(a)  # only block 2 was a's alone; it joins the free list (last block first)
    assert bm.ref_counts == [1, 1, 0, 1, 0, 0]
    assert bm.free_block_ids == [4, 5, 2]
    b.num_computed_tokens = 11
    bm.cache_computed_blocks(b)  # b's block 3 holds 3 positions: not full, not keyed
    bm.free(b)  # b's table [0, 1, 3] released last block first
    assert bm.free_block_ids == [4, 5, 2, 3, 1, 0]
    assert bm.num_used_blocks == 0 and bm.num_cached_blocks == 2  # free, but still hits


def test_allocation_evicts_the_least_recently_freed_block_and_a_broken_chain_stops_the_hits():
    bm = BlockManager(num_blocks=4, block_size=4, enable_prefix_caching=True)
    a = make_seq("a", 12, 1)
    computed(bm, a, 13)  # a holds [0, 1, 2, 3]; 0, 1, 2 keyed
    bm.free(a)  # free list [3, 2, 1, 0]: the chain's end is evicted first, its start last
    assert bm.free_block_ids == [3, 2, 1, 0] and bm.num_cached_blocks == 3
    c = make_seq("c", 0, 8)  # an unrelated prompt takes blocks 3 and 2: evicts block 2's key
    bm.allocate(c, 8)
    assert c.block_table == [3, 2]
    assert bm.num_cached_blocks == 2 and bm.block_key(2) is None

    b = make_seq("b", 12, 2)  # wants blocks 0, 1, 2 of the voice: only 0 and 1 are still cached
    assert bm.allocate_cached_prefix(b) == 8
    assert b.block_table == [0, 1]  # hits in chain order
    assert bm.free_block_ids == [] and bm.ref_counts == [1, 1, 1, 1]


def test_the_newest_position_is_always_computed_in_a_block_of_its_own():
    bm = BlockManager(num_blocks=4, block_size=4, enable_prefix_caching=True)
    computed(bm, make_seq("a", 12, 0), 12)  # blocks 0, 1, 2 keyed
    b = make_seq("b", 8, 0)  # exactly two cached blocks long
    assert bm.allocate_cached_prefix(b) == 4  # block 1 holds b's newest position: computed again
    bm.allocate(b, 8)
    assert b.block_table == [0, 3]  # never writes into the shared block 1


def test_equal_rows_after_a_different_start_are_no_hit():
    bm = BlockManager(num_blocks=6, block_size=4, enable_prefix_caching=True)
    computed(bm, make_seq("a", 9, 0), 9)  # blocks 0 and 1 keyed
    b = make_seq("b", 9, 0)
    b._inputs[0, 0] += 1.0  # one changed value in block 0; block 1's rows are still VOICE[4:8]
    assert bm.allocate_cached_prefix(b) == 0
    assert b.block_table == [] and bm.ref_counts == [1, 1, 1, 0, 0, 0]


def test_two_copies_of_the_same_prefix_keep_the_first_one_cached_and_the_second_private():
    bm = BlockManager(num_blocks=6, block_size=4, enable_prefix_caching=True)
    a, b = make_seq("a", 5, 0), make_seq("b", 5, 0)  # admitted in the same step: neither is cached yet
    bm.allocate(a, 5)
    bm.allocate(b, 5)
    for seq in (a, b):
        seq.num_computed_tokens = 5
        bm.cache_computed_blocks(seq)
    assert (a.block_table, b.block_table) == ([0, 1], [2, 3])
    assert (bm.block_key(0) is not None, bm.block_key(2)) == (True, None)
    assert bm.num_cached_blocks == 1


def test_without_prefix_caching_nothing_is_keyed_or_shared():
    bm = BlockManager(num_blocks=6, block_size=4)
    computed(bm, make_seq("a", 10, 0), 10)
    b = make_seq("b", 10, 0)
    assert bm.allocate_cached_prefix(b) == 0 and bm.num_cached_blocks == 0


# ---- the scheduler ----


def step(scheduler: Scheduler):
    """The engine's part, as in test_scheduler.py: chunks get computed, a completing chunk a frame."""
    out = scheduler.schedule()
    for chunk in out.chunks:
        chunk.seq.num_computed_tokens += chunk.num_tokens
        if chunk.completes:
            chunk.seq.append_frame(np.zeros(16, np.int64), np.zeros(H, np.float32))
    return [(c.seq.request.id, c.start, c.num_tokens) for c in out.chunks]


def test_a_second_request_with_the_same_voice_prefills_only_after_the_shared_blocks():
    s = Scheduler(BlockManager(8, 4, enable_prefix_caching=True), max_num_seqs=4, max_num_batched_tokens=16)
    a = make_seq("a", 10, 0)
    s.add(a)
    assert step(s) == [("a", 0, 10)]  # a: blocks [0, 1, 2]
    b = make_seq("b", 8, 3)
    s.add(b)
    # schedule() first registers a's computed blocks 0 and 1; b shares them and prefills 8..10.
    assert step(s) == [("a", 10, 1), ("b", 8, 3)]
    assert (a.block_table, b.block_table) == ([0, 1, 2], [0, 1, 3])
    assert s.block_manager.ref_counts[:4] == [2, 2, 1, 1]
    s.finish(a, SequenceStatus.FINISHED_STOPPED)
    s.finish(b, SequenceStatus.FINISHED_CANCELLED)
    assert s.block_manager.num_used_blocks == 0 and s.block_manager.num_cached_blocks == 2


def test_a_preempted_sequence_gets_its_own_cached_blocks_back_and_recomputes_only_the_rest():
    s = Scheduler(BlockManager(4, 4, enable_prefix_caching=True), max_num_seqs=4, max_num_batched_tokens=16)
    a = make_seq("a", 9, 0)
    s.add(a)
    assert step(s) == [("a", 0, 9)]  # a: [0, 1, 2], 9 computed + 1 pending position
    e = make_seq("e", 0, 5, urgent=True)
    s.add(e)
    # e needs 2 blocks, only block 3 is free: a is preempted, its full blocks 0 and 1 stay cached.
    assert step(s) == [("e", 0, 5)]
    assert (a.status, e.block_table) == (SequenceStatus.PREEMPTED, [3, 2])
    assert s.block_manager.free_block_ids == [1, 0]  # a's cached blocks; a's attempt each step leaves them
    assert step(s) == [("e", 5, 1)]  # a still cannot get a third block
    s.finish(e, SequenceStatus.FINISHED_STOPPED)
    # a's 10 positions: blocks 0 and 1 are hits, positions 8 and 9 are prefilled into block 2.
    assert step(s) == [("a", 8, 2)]
    assert a.block_table == [0, 1, 2] and s.num_preemptions == 1
    # Admissions a (9 positions), e (5), a again (10, 8 of them hits); a's failed attempt is not counted.
    bm = s.block_manager
    assert (bm.num_prefix_queried_tokens, bm.num_prefix_hit_tokens) == (24, 8)


def test_a_sequence_that_fails_registers_no_new_blocks():
    s = Scheduler(BlockManager(4, 4, enable_prefix_caching=True), max_num_seqs=4, max_num_batched_tokens=16)
    a = make_seq("a", 9, 0)
    s.add(a)
    step(s)  # a computed 9 positions: nothing registered yet (that happens at the next schedule)
    s.finish(a, SequenceStatus.FINISHED_ERROR)
    assert s.block_manager.num_cached_blocks == 0 and s.block_manager.num_used_blocks == 0
