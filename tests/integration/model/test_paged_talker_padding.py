"""A talker step of more than PAD_TO new positions runs padded to a multiple of it (runtime/paged_talker.py):
the CPU plugin keeps memory for every step size it has run, so the sizes a daemon can make are few.
The padding is a sequence of its own in a block beyond the engine's pool; the real rows are unchanged."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from talker_reference import TINY_TALKER, random_talker_weights

from qwen3tts.model.graphs.talker import INPUTS_EMBEDS, build_talker, to_paged
from qwen3tts.runtime import paged_talker
from qwen3tts.runtime.paged_talker import PAD_TO, PagedTalker, padded_positions

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
NUM_BLOCKS = 8


@pytest.fixture(scope="module")
def compiled():
    model = to_paged(build_talker(TINY_TALKER, random_talker_weights(TINY_TALKER, seed=3)))
    return ov.Core().compile_model(model, "CPU", {**F32, "KV_CACHE_PRECISION": "f32"})


def _rows(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, TINY_TALKER.hidden_size)).astype(np.float32)


def _two_steps(talker: PagedTalker) -> list[np.ndarray]:
    """A prefills 9 and B 4 in one step (13 positions), then both decode one (2): logits of each step."""
    a, b = _rows(1, 10), _rows(2, 5)
    first, _ = talker.step([(a[:9], 0, [5]), (b[:4], 0, [2])])
    ran_with = talker._request.get_tensor(INPUTS_EMBEDS).shape[0]
    second, _ = talker.step([(a[9:], 9, [5]), (b[4:], 4, [2])])
    return [first, second, np.array(ran_with)]


def test_step_sizes_up_to_pad_to_run_as_they_are_and_larger_ones_padded():
    assert [padded_positions(n) for n in range(1, PAD_TO + 1)] == list(range(1, PAD_TO + 1))
    assert [padded_positions(n) for n in (PAD_TO + 1, 2 * PAD_TO, 2 * PAD_TO + 1, 256)] == [
        2 * PAD_TO,
        2 * PAD_TO,
        3 * PAD_TO,
        256,
    ]
    assert len({padded_positions(n) for n in range(1, 257)}) == PAD_TO + 256 // PAD_TO - 1


def test_a_padded_step_gives_the_rows_it_would_give_unpadded(compiled, monkeypatch):
    padded = _two_steps(PagedTalker(compiled, NUM_BLOCKS))
    monkeypatch.setattr(paged_talker, "padded_positions", lambda count: count)
    unpadded = _two_steps(PagedTalker(compiled, NUM_BLOCKS))

    assert padded[2] == padded_positions(13) == 16 and unpadded[2] == 13
    assert padded[0].shape == unpadded[0].shape == (2, TINY_TALKER.vocab_size)  # no row for the padding
    np.testing.assert_allclose(padded[0], unpadded[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(padded[1], unpadded[1], rtol=1e-5, atol=1e-5)  # the K/V it left are theirs


def test_the_padding_has_a_block_beyond_the_engines_pool(compiled):
    talker = PagedTalker(compiled, NUM_BLOCKS)

    assert talker._request.get_tensor("value_cache.0").shape[0] == NUM_BLOCKS + 1
    with pytest.raises(ValueError, match="outside"):  # which no sequence may name
        talker.step([(_rows(4, 2), 0, [NUM_BLOCKS])])
