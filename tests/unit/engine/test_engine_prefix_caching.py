"""Engine with prefix caching over the FakeRunner: shared voice prefixes never change anyone's codes.

The fake (shared_kv=True) lets a sequence read slots another one wrote, but its outputs are still a
hash of every row digest read back through the block table: a wrongly shared or stale block changes
the codes, which are compared with the same requests run with prefix caching off.
"""

import numpy as np
import pytest
from engine_fakes import FakeRunner

from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Prompt, Request, SequenceStatus
from qwen3tts.errors import RequestError

HIDDEN = 8
VOICE_ROWS = 10  # with blocks of 4 positions: two full shared blocks


def voice_prompt_builder(request: Request) -> Prompt:
    """The voice's rows first (the same for every request of that speaker), then the text's rows."""
    voice = np.random.default_rng(sum(map(ord, request.speaker or ""))).standard_normal((VOICE_ROWS, HIDDEN))
    words = request.text.split()
    text = np.stack([np.random.default_rng(sum(map(ord, w))).standard_normal(HIDDEN) for w in words])
    rows = np.concatenate([voice, text]).astype(np.float32)
    return Prompt(rows, np.zeros((0, HIDDEN), np.float32), np.ones(HIDDEN, np.float32))


TEXTS = ["the next train", "please mind the gap now", "doors closing", "one two three four five six"]


def requests():
    return [Request(f"r{i}", text, speaker="anna", seed=i) for i, text in enumerate(TEXTS)]


def make_engine(prefix_caching: bool, num_kv_blocks: int = 64, **config) -> Engine:
    runner = FakeRunner(num_kv_blocks=num_kv_blocks, shared_kv=prefix_caching)
    return Engine(runner, voice_prompt_builder, EngineConfig(enable_prefix_caching=prefix_caching, **config))


def run(engine: Engine, batches, max_steps: int = 3000):
    """Submit each batch once the previous one finished; returns handles by request id."""
    handles = {}
    for batch in batches:
        new = {req.id: engine.submit(req) for req in batch}
        handles.update(new)
        for _ in range(max_steps):
            if all(h.wait(0) for h in new.values()):
                break
            engine.step()
    return handles


@pytest.fixture(scope="module")
def codes_without_caching():
    handles = run(make_engine(False), [[req] for req in requests()])
    return {rid: (h.frames, h.result(0)) for rid, h in handles.items()}


def assert_same_codes(handles, expected):
    for rid, handle in handles.items():
        np.testing.assert_array_equal(handle.frames, expected[rid][0], err_msg=rid)
        np.testing.assert_array_equal(handle.result(0), expected[rid][1], err_msg=rid)


def test_later_requests_of_the_same_voice_hit_the_cache_and_produce_identical_codes(codes_without_caching):
    engine = make_engine(True)
    first, *rest = requests()
    handles = run(engine, [[first], rest])  # the rest run together, after the first finished
    assert_same_codes(handles, codes_without_caching)
    bm = engine.block_manager
    assert bm.num_prefix_hit_tokens >= 8 * len(rest)  # each later request skipped two voice blocks
    prefills = [call for call in engine.runner.talker_calls if any(past == 8 for _, past, _ in call)]
    assert prefills  # a prefill chunk started at position 8: after the shared blocks
    assert bm.num_used_blocks == 0 and bm.num_cached_blocks > 0


def test_a_pool_too_small_preempts_and_recomputes_from_cached_blocks_with_identical_codes(
    codes_without_caching,
):
    engine = make_engine(True, num_kv_blocks=12)
    handles = run(engine, [requests()])
    assert engine.stats().num_preemptions > 0
    assert_same_codes(handles, codes_without_caching)
    assert engine.block_manager.num_used_blocks == 0


def test_cancel_and_a_failure_leave_the_other_requests_of_the_voice_unchanged(codes_without_caching):
    engine = make_engine(True)
    handles = {req.id: engine.submit(req) for req in requests()}
    for _ in range(6):
        engine.step()
    handles["r1"].cancel()
    engine.runner.nan_logits.add(handles["r2"].seq_id)
    for _ in range(3000):
        if all(h.wait(0) for h in handles.values()):
            break
        engine.step()
    assert handles["r1"].status is SequenceStatus.FINISHED_CANCELLED
    with pytest.raises(RequestError):
        handles["r2"].result(0)
    assert_same_codes({rid: handles[rid] for rid in ("r0", "r3")}, codes_without_caching)
    assert engine.block_manager.num_used_blocks == 0
