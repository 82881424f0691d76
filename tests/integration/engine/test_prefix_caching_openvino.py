"""Prefix caching on a real tiny bundle: requests of one voice share KV blocks and keep their codes.

A saved VoiceDesign voice is its instruct turn, which opens every prompt of that voice: the voice's
full KV blocks are computed once and shared. Greedy decoding with f32 inference and an f32 KV cache
makes "the same codes with prefix caching on and off" an exact comparison of discrete codes.
"""

import numpy as np
import pytest
from bundles import PARITY_OVERRIDES

from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

VOICE = (
    "A calm, warm, low female voice with a slight smile, speaking slowly and clearly, like a station "
    "announcer in a quiet hall, with gentle pauses between phrases and no background noise."
)
TEXTS = ["The train to Berlin leaves from platform four.", "Doors closing, please stand back."]


def request(i: int) -> Request:
    return Request(id=f"r{i}", text=TEXTS[i], language="english", instruct=VOICE, greedy=True, max_frames=12)


def engine_for(bundle, prefix_caching: bool):
    flag = f"engine.prefix_caching={str(prefix_caching).lower()}"
    settings = load_settings(None, [*PARITY_OVERRIDES, flag])
    return load_runtime(bundle, settings).engine


def run_alone(engine, req):
    handle = engine.submit(req)
    for _ in range(200):
        if handle.wait(0):
            break
        engine.step()
    assert handle.status is SequenceStatus.FINISHED_LENGTH
    return handle


@pytest.fixture(scope="module")
def bundle(tiny_models):
    return tiny_models.bundle("voice_design", "tiny-1.7b", "f32")


def test_two_requests_of_one_voice_share_its_blocks_and_produce_the_codes_of_an_uncached_run(bundle):
    off = engine_for(bundle, prefix_caching=False)
    expected = [run_alone(off, request(i)).frames for i in range(2)]
    assert off.block_manager.num_cached_blocks == 0

    on = engine_for(bundle, prefix_caching=True)
    bm = on.block_manager
    first = run_alone(on, request(0))
    assert bm.num_prefix_hit_tokens == 0 and bm.num_cached_blocks >= 1
    second = run_alone(on, request(1))
    # The instruct turn is longer than a block: the second request started after the shared blocks.
    assert bm.num_prefix_hit_tokens >= bm.block_size
    np.testing.assert_array_equal(first.frames, expected[0])
    np.testing.assert_array_equal(second.frames, expected[1])
    assert bm.num_used_blocks == 0
