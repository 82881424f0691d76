"""Scheduler: exact batch members, block ids and preemption victims on tiny pools.

`step()` plays the engine's part: every chunk's positions become computed and a chunk that reaches a
sequence's newest position yields one frame (so the sequence then needs one decode position).
"""

import numpy as np
import pytest

from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import SamplingParams
from qwen3tts.engine.scheduler import Scheduler
from qwen3tts.engine.sequence import Prompt, Request, Sequence, SequenceStatus

H = 2


def make_seq(name: str, prompt_len: int, rank: int = 0, *, urgent: bool = False) -> Sequence:
    prompt = Prompt(
        np.zeros((prompt_len, H), np.float32), np.zeros((0, H), np.float32), np.zeros(H, np.float32)
    )
    return Sequence(Request(name, "text", rank=rank, urgent=urgent), prompt, SamplingParams(), max_frames=100)


def make_scheduler(num_blocks: int, max_num_seqs: int = 4, budget: int = 16) -> Scheduler:
    return Scheduler(BlockManager(num_blocks, block_size=4), max_num_seqs, budget)


def step(scheduler: Scheduler):
    out = scheduler.schedule()
    for chunk in out.chunks:
        chunk.seq.num_computed_tokens += chunk.num_tokens
        if chunk.completes:
            chunk.seq.append_frame(np.zeros(16, np.int64), np.zeros(H, np.float32))
    plan = [(c.seq.request.id, c.start, c.num_tokens) for c in out.chunks]
    return plan, out


def tables(*seqs: Sequence) -> list[list[int]]:
    return [seq.block_table for seq in seqs]


def test_decodes_go_first_and_a_long_prompt_is_prefilled_in_chunks_of_the_remaining_budget():
    s = make_scheduler(num_blocks=16, budget=8)
    a, b, c = make_seq("a", 3), make_seq("b", 2), make_seq("c", 10)
    s.add(a)
    s.add(b)
    assert step(s)[0] == [("a", 0, 3), ("b", 0, 2)]  # both prompts fit the budget of 8
    assert tables(a, b) == [[0], [1]]
    s.add(c)
    # a and b decode their pending position first; c gets the 6 positions left in the budget.
    assert step(s)[0] == [("a", 3, 1), ("b", 2, 1), ("c", 0, 6)]
    assert tables(a, b, c) == [[0], [1], [2, 3]]
    assert c.num_frames == 0  # a partial prefill samples nothing
    # a's fifth position opens block 4; c's last 4 prompt positions need block 5 and complete it.
    assert step(s)[0] == [("a", 4, 1), ("b", 3, 1), ("c", 6, 4)]
    assert tables(a, b, c) == [[0, 4], [1], [2, 3, 5]]
    assert step(s)[0] == [("a", 5, 1), ("b", 4, 1), ("c", 10, 1)]  # now everybody decodes
    assert tables(a, b, c) == [[0, 4], [1, 6], [2, 3, 5]]


def test_waiting_requests_start_by_rank_then_arrival_up_to_max_num_seqs():
    s = make_scheduler(num_blocks=16, max_num_seqs=2)
    n1, n2, p1 = make_seq("n1", 2), make_seq("n2", 2), make_seq("p1", 2, rank=1)
    for seq in (n1, n2, p1):
        s.add(seq)
    assert [seq.request.id for seq in s.waiting] == ["p1", "n1", "n2"]
    assert step(s)[0] == [("p1", 0, 2), ("n1", 0, 2)]  # two slots
    assert step(s)[0] == [("p1", 2, 1), ("n1", 2, 1)]  # n2 still waits
    s.finish(p1, SequenceStatus.FINISHED_STOPPED)
    assert p1.block_table == [] and p1.status is SequenceStatus.FINISHED_STOPPED
    assert step(s)[0] == [("n1", 3, 1), ("n2", 0, 2)]  # the freed slot goes to n2


def test_block_exhaustion_preempts_the_lowest_rank_most_recently_admitted_and_recomputes_it():
    s = make_scheduler(num_blocks=4, budget=16)
    a, b, c = make_seq("a", 3), make_seq("b", 3), make_seq("c", 3, rank=1)
    for seq in (a, b, c):
        s.add(seq)
    assert step(s)[0] == [("c", 0, 3), ("a", 0, 3), ("b", 0, 3)]  # admitted c, a, b
    assert tables(c, a, b) == [[0], [1], [2]]
    assert step(s)[0] == [("c", 3, 1), ("a", 3, 1), ("b", 3, 1)]  # 4 positions: first blocks full
    # Every sequence now needs a second block, one is free. c takes block 3; a finds none, so the
    # victim is b (normal like a, but admitted after it); b's block 2 goes to a.
    plan, out = step(s)
    assert plan == [("c", 4, 1), ("a", 4, 1)]
    assert out.preempted == [b] and s.num_preemptions == 1
    assert tables(c, a, b) == [[0, 3], [1, 2], []]
    assert (b.status, b.num_computed_tokens, b.num_tokens) == (SequenceStatus.PREEMPTED, 0, 5)
    assert step(s)[0] == [("c", 5, 1), ("a", 5, 1)]  # b's 5 positions need 2 blocks, none free
    s.finish(c, SequenceStatus.FINISHED_STOPPED)  # free list [0, 3]
    # b recomputes prompt + its 2 generated frames in one chunk; its newest position gets the logits.
    assert step(s)[0] == [("a", 6, 1), ("b", 0, 5)]
    assert tables(a, b) == [[1, 2], [0, 3]]
    assert (b.num_frames, b.num_uncomputed_tokens) == (3, 1)


def test_the_lowest_sequence_shrinks_its_prefill_chunk_to_its_free_blocks_then_steps_aside():
    s = make_scheduler(num_blocks=3, budget=8)
    a, b = make_seq("a", 3, rank=1), make_seq("b", 12)
    s.add(a)
    s.add(b)
    assert step(s)[0] == [("a", 0, 3), ("b", 0, 5)]
    assert tables(a, b) == [[0], [1, 2]]
    # b wants 7 more positions but is itself the victim: it takes the 3 that fit in its own blocks.
    assert step(s)[0] == [("a", 3, 1), ("b", 5, 3)]
    # a's decode needs a block: b is preempted and a gets b's first block.
    plan, out = step(s)
    assert plan == [("a", 4, 1)] and out.preempted == [b]
    assert tables(a, b) == [[0, 1], []]


def test_set_max_batch_preempts_newest_normals_but_never_emergencies():
    s = make_scheduler(num_blocks=32, max_num_seqs=4)
    n1, n2, e1, n3 = (
        make_seq("n1", 2),
        make_seq("n2", 2),
        make_seq("e1", 2, rank=2, urgent=True),
        make_seq("n3", 2),
    )
    for seq in (n1, n2, e1, n3):
        s.add(seq)
    step(s)
    assert [seq.request.id for seq in s.running] == ["e1", "n1", "n2", "n3"]
    s.set_max_batch(1)
    plan, out = step(s)
    # Shrinking to 1: n3 then n2 then n1 (newest first) leave; the emergency stays.
    assert [seq.request.id for seq in out.preempted] == ["n3", "n2", "n1"]
    assert plan == [("e1", 2, 1)]
    s.set_max_batch(2)
    assert step(s)[0] == [("e1", 3, 1), ("n1", 0, 3)]  # n1 recomputes 2 prompt + 1 frame


def test_an_emergency_bypasses_the_throttle_and_displaces_a_normal_when_all_slots_are_taken():
    s = make_scheduler(num_blocks=32, max_num_seqs=2)
    n1, n2, e1 = make_seq("n1", 2), make_seq("n2", 2), make_seq("e1", 2, rank=2, urgent=True)
    s.add(n1)
    s.add(n2)
    step(s)
    s.set_max_batch(1)
    s.add(e1)
    plan, out = step(s)
    # Throttle to 1 preempts n2; e1 then needs a slot: running is 1 < max_num_seqs 2, so it starts
    # beyond the throttle without touching n1.
    assert out.preempted == [n2]
    assert plan == [("n1", 2, 1), ("e1", 0, 2)]
    s.set_max_batch(2)
    s.add(make_seq("e2", 2, rank=2, urgent=True))
    plan, out = step(s)
    # Both slots taken (n1, e1): e2 displaces n1, the only non-emergency, even though n1 already had
    # its decode planned this step.
    assert out.preempted == [n1]
    assert plan == [("e1", 2, 1), ("e2", 0, 2)]


def test_an_emergency_displaces_normals_to_get_kv_blocks():
    s = make_scheduler(num_blocks=2)
    n1, e1 = make_seq("n1", 7), make_seq("e1", 4, rank=2, urgent=True)
    s.add(n1)
    step(s)
    assert n1.block_table == [0, 1]  # 8 positions known (7 prompt + 1 frame): the pool is full
    s.add(e1)
    plan, out = step(s)
    # n1's decode fits its blocks, but e1 needs one: n1 is displaced (its planned decode dropped).
    assert out.preempted == [n1] and plan == [("e1", 0, 4)] and e1.block_table == [0]


def test_a_request_larger_than_the_whole_pool_alone_fails_with_a_request_error_and_frees_its_blocks():
    s = make_scheduler(num_blocks=2)
    a = make_seq("a", 7)
    s.add(a)
    assert step(s)[0] == [("a", 0, 7)]
    assert step(s)[0] == [("a", 7, 1)]  # position 8 is the last one 2 blocks of 4 hold
    plan, out = step(s)
    assert plan == [] and out.aborted == [a]
    assert a.status is SequenceStatus.FINISHED_ERROR and "KV blocks" in str(a.error)
    assert s.block_manager.num_used_blocks == 0 and not s.has_unfinished()


def test_finishing_a_waiting_sequence_removes_it_from_the_queue():
    s = make_scheduler(num_blocks=4)
    a = make_seq("a", 2)
    s.add(a)
    s.finish(a, SequenceStatus.FINISHED_CANCELLED)
    assert s.waiting == [] and step(s)[0] == []


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_max_batch_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError):
        make_scheduler(num_blocks=4).set_max_batch(bad)
