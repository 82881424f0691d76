"""The opset talker graph against a numpy reference, and its paged form against the stateful one.

Tiny random weights in the release key layout (talker_reference.py); f32 inference everywhere.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from talker_reference import TINY_CODEBOOK_SIZE, TINY_TALKER, numpy_talker_forward, random_talker_weights

from qwen3tts.model.graphs.embeddings import (
    CodecEmbedder,
    build_frame_embedding,
    build_text_embedding,
    project_text_table,
)
from qwen3tts.model.graphs.talker import build_talker, to_paged
from qwen3tts.runtime.paged_talker import PagedTalker

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
TOL = 1e-4
NUM_BLOCKS = 16


@pytest.fixture(scope="module")
def weights():
    return random_talker_weights(TINY_TALKER, seed=0)


@pytest.fixture(scope="module")
def stateful_model(weights):
    return build_talker(TINY_TALKER, weights)


@pytest.fixture(scope="module")
def paged_model(stateful_model):
    return to_paged(stateful_model)


@pytest.fixture(scope="module")
def stateful_compiled(stateful_model):
    return ov.Core().compile_model(stateful_model, "CPU", F32)


def paged_talker(paged_model, kv_precision: str) -> PagedTalker:
    compiled = ov.Core().compile_model(paged_model, "CPU", {**F32, "KV_CACHE_PRECISION": kv_precision})
    return PagedTalker(compiled, NUM_BLOCKS)


def embeds(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, TINY_TALKER.hidden_size)).astype(np.float32)


def run_stateful(compiled, chunks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Feed one sequence chunk by chunk through a fresh state; all rows of logits and hidden."""
    request = compiled.create_infer_request()
    request.reset_state()
    logits, hidden, past = [], [], 0
    for chunk in chunks:
        n = chunk.shape[0]
        out = request.infer(
            {
                "inputs_embeds": chunk[None],
                "attention_mask": np.ones((1, past + n), np.int64),
                "position_ids": np.arange(past, past + n, dtype=np.int64)[None],
                "beam_idx": np.zeros(1, np.int32),
            }
        )
        logits.append(out["logits"][0])
        hidden.append(out["last_hidden_state"][0])
        past += n
    return np.concatenate(logits), np.concatenate(hidden)


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max())


def test_stateful_talker_matches_numpy_over_prefill_and_three_decode_steps(stateful_compiled, weights):
    x = embeds(1, 13)
    chunks = [x[:10], x[10:11], x[11:12], x[12:13]]
    logits, hidden = run_stateful(stateful_compiled, chunks)
    ref_logits, ref_hidden = numpy_talker_forward(TINY_TALKER, weights, x)
    logit_diff, hidden_diff = max_diff(logits, ref_logits), max_diff(hidden, ref_hidden)
    scale = np.abs(ref_logits).max()
    print(f"stateful vs numpy: logits {logit_diff:.2e} hidden {hidden_diff:.2e} (|logit|max {scale:.2f})")
    assert logits.shape == (13, TINY_TALKER.vocab_size)
    assert logit_diff < TOL
    assert hidden_diff < TOL


def test_stateful_talker_batches_left_padded_sequences(stateful_compiled, weights):
    # Row 0 is 3 tokens left-padded to 6; its positions start at 0 after the padding (cumsum(mask) - 1).
    a, b = embeds(2, 3), embeds(3, 6)
    batch = np.stack([np.concatenate([np.zeros((3, TINY_TALKER.hidden_size), np.float32), a]), b])
    mask = np.array([[0, 0, 0, 1, 1, 1], [1] * 6], np.int64)
    positions = np.array([[0, 0, 0, 0, 1, 2], list(range(6))], np.int64)
    request = stateful_compiled.create_infer_request()
    request.reset_state()
    out = request.infer(
        {
            "inputs_embeds": batch,
            "attention_mask": mask,
            "position_ids": positions,
            "beam_idx": np.arange(2, dtype=np.int32),
        }
    )
    assert max_diff(out["logits"][0, 3:], numpy_talker_forward(TINY_TALKER, weights, a)[0]) < TOL
    assert max_diff(out["logits"][1], numpy_talker_forward(TINY_TALKER, weights, b)[0]) < TOL


def test_paged_conversion_replaces_every_attention_and_keeps_the_stateful_model(stateful_model, paged_model):
    ops = [op.get_type_name() for op in paged_model.get_ops()]
    assert ops.count("PagedAttentionExtension") == TINY_TALKER.num_hidden_layers
    assert "ReadValue" not in ops and "ScaledDotProductAttention" not in ops
    stateful_ops = [op.get_type_name() for op in stateful_model.get_ops()]
    assert stateful_ops.count("ReadValue") == 2 * TINY_TALKER.num_hidden_layers
    for op in paged_model.get_ops():
        if op.get_type_name() == "PagedAttentionExtension":
            info = op.get_rt_info()
            assert info["num_k_heads"].astype(int) == TINY_TALKER.num_key_value_heads
            assert info["k_head_size"].astype(int) == TINY_TALKER.head_dim
    names = {port.get_any_name() for port in paged_model.outputs}
    assert names == {"logits", "last_hidden_state"}


def continuous_batching_scenario(talker: PagedTalker) -> dict[str, np.ndarray]:
    """A prefills 10; A decodes while B prefills 5; both decode; C prefills past a block boundary while A
    decodes; C decodes. Block ids are scrambled. Returns each step's last-token logits per sequence."""
    bs = talker.block_size
    a, b, c = embeds(10, 13), embeds(11, 6), embeds(12, bs + 9)
    table_a, table_b, table_c = [7], [2], [11, 4]
    steps = [
        [("A", a[:10], 0, table_a)],
        [("A", a[10:11], 10, table_a), ("B", b[:5], 0, table_b)],
        [("A", a[11:12], 11, table_a), ("B", b[5:6], 5, table_b)],
        [("C", c[: bs + 8], 0, table_c), ("A", a[12:13], 12, table_a)],
        [("C", c[bs + 8 :], bs + 8, table_c)],
    ]
    got: dict[str, list[np.ndarray]] = {"A": [], "B": [], "C": []}
    for step in steps:
        logits, hidden = talker.step([(x, past, table) for _, x, past, table in step])
        assert hidden.shape == (len(step), TINY_TALKER.hidden_size)
        for row, (name, *_rest) in enumerate(step):
            got[name].append(logits[row])
    return {"inputs": {"A": a, "B": b, "C": c}, **{k: np.stack(v) for k, v in got.items()}}


def stateful_last_rows(compiled, x: np.ndarray, chunk_ends: list[int]) -> np.ndarray:
    """Stateful logits of the last token of each chunk [0:e0], [e0:e1], ..."""
    starts = [0, *chunk_ends[:-1]]
    logits, _ = run_stateful(compiled, [x[s:e] for s, e in zip(starts, chunk_ends, strict=True)])
    return logits[np.array(chunk_ends) - 1]


def scenario_diffs(result, stateful_compiled, block_size: int) -> dict[str, float]:
    x, c_ends = result["inputs"], [block_size + 8, block_size + 9]
    return {
        "A": max_diff(result["A"], stateful_last_rows(stateful_compiled, x["A"], [10, 11, 12, 13])),
        "B": max_diff(result["B"], stateful_last_rows(stateful_compiled, x["B"], [5, 6])),
        "C": max_diff(result["C"], stateful_last_rows(stateful_compiled, x["C"], c_ends)),
    }


def test_paged_f32_matches_stateful_through_mixed_steps_and_a_block_boundary(paged_model, stateful_compiled):
    talker = paged_talker(paged_model, "f32")
    result = continuous_batching_scenario(talker)
    diffs = scenario_diffs(result, stateful_compiled, talker.block_size)
    print(f"paged f32 KV vs stateful (block size {talker.block_size}): {diffs}")
    assert max(diffs.values()) < TOL


def test_paged_u8_kv_stays_close_to_stateful(paged_model, stateful_compiled):
    talker = paged_talker(paged_model, "u8")
    result = continuous_batching_scenario(talker)
    diffs = scenario_diffs(result, stateful_compiled, talker.block_size)
    scale = float(np.abs(result["A"]).max())
    print(f"paged u8 KV drift vs stateful f32: {diffs} (|logit|max {scale:.2f})")
    assert max(diffs.values()) < 0.05 * scale


def test_paged_talker_reads_block_size_from_the_compiled_value_cache(paged_model):
    for precision in ("f32", "u8"):
        compiled = ov.Core().compile_model(paged_model, "CPU", {**F32, "KV_CACHE_PRECISION": precision})
        value_shape = compiled.input("value_cache.0").get_partial_shape()
        talker = PagedTalker(compiled, NUM_BLOCKS)
        assert talker.block_size == value_shape[2].get_length()
        assert talker.blocks_needed(talker.block_size + 1) == 2
        assert talker.cache_bytes > 0


def test_paged_talker_rejects_a_block_table_too_short_for_the_tokens(paged_model):
    talker = paged_talker(paged_model, "f32")
    with pytest.raises(ValueError, match="too short"):
        talker.step([(embeds(5, talker.block_size + 1), 0, [3])])
    with pytest.raises(ValueError, match="outside"):
        talker.step([(embeds(5, 2), 0, [NUM_BLOCKS])])


# ---------------------------------------------------------------- embeddings


def text_mlp_reference(weights, ids: np.ndarray) -> np.ndarray:
    """linear_fc2(silu(linear_fc1(text_embedding[ids]))) in float64."""
    p = "talker.text_projection"
    rows = weights["talker.model.text_embedding.weight"][ids].astype(np.float64)
    pre = rows @ weights[f"{p}.linear_fc1.weight"].T + weights[f"{p}.linear_fc1.bias"]
    return (pre / (1 + np.exp(-pre))) @ weights[f"{p}.linear_fc2.weight"].T + weights[f"{p}.linear_fc2.bias"]


def test_projected_text_table_applies_the_text_mlp_to_every_row(weights):
    every_id = np.arange(TINY_TALKER.text_vocab_size)
    reference = text_mlp_reference(weights, every_id)
    table32 = project_text_table(weights, dtype=np.float32, chunk_rows=7)  # 7 does not divide the vocab
    table16 = project_text_table(weights)
    assert table32.shape == (TINY_TALKER.text_vocab_size, TINY_TALKER.hidden_size)
    assert table16.dtype == np.float16
    assert max_diff(table32, reference) < 1e-5
    np.testing.assert_allclose(table16.astype(np.float32), reference, rtol=2e-3, atol=2e-3)


def test_text_embedding_graph_matches_the_text_mlp(weights):
    compiled = ov.Core().compile_model(build_text_embedding(weights), "CPU", F32)
    ids = np.array([[0, 5, TINY_TALKER.text_vocab_size - 1], [1, 2, 3]], np.int64)
    got = compiled({"input_ids": ids})["text_embeds"]
    assert got.shape == (2, 3, TINY_TALKER.hidden_size)
    assert max_diff(got, text_mlp_reference(weights, ids)) < 1e-5


def frame_sum_reference(weights, codes: np.ndarray) -> np.ndarray:
    """codec_embedding(c0) + sum_j code_predictor codec_embedding[j](c_{j+1}), one frame at a time."""
    out = []
    for frame in codes:
        total = weights["talker.model.codec_embedding.weight"][frame[0]].astype(np.float64)
        for j, code in enumerate(frame[1:]):
            total = total + weights[f"talker.code_predictor.model.codec_embedding.{j}.weight"][code]
        out.append(total)
    return np.stack(out)


def test_frame_embedding_sums_all_codebooks_in_numpy_and_in_the_graph(weights):
    groups = TINY_TALKER.num_code_groups
    rng = np.random.default_rng(4)
    codes = rng.integers(0, TINY_CODEBOOK_SIZE, (5, groups))
    codes[:, 0] = rng.integers(0, TINY_TALKER.vocab_size, 5)  # code 0 indexes the larger talker table
    reference = frame_sum_reference(weights, codes)
    embedder = CodecEmbedder.from_weights(weights, groups)
    compiled = ov.Core().compile_model(build_frame_embedding(weights, groups), "CPU", F32)
    assert max_diff(embedder.frame(codes), reference) < 1e-5
    assert max_diff(compiled({"codes": codes})["frame_embeds"], reference) < 1e-5
    codec_table = weights["talker.model.codec_embedding.weight"]
    np.testing.assert_array_equal(embedder.codec(codes[:, 0]), codec_table[codes[:, 0]])
