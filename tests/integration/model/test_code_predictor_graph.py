"""The batched code-predictor graph against a pure-numpy re-implementation of the official loop.

The numpy reference recomputes the whole causal sequence at every codebook step (no KV cache) and samples
the HF way over the full vocabulary (temperature -> top-k -> top-p by sorting), so it shares no structure
with the graph's in-graph KV and TopK/Gumbel sampler.
"""

from __future__ import annotations

import nncf
import numpy as np
import openvino as ov
import pytest

from qwen3tts.errors import CheckpointError
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.model.spec import CodePredictorSpec

VOCAB = 256
TALKER_VOCAB = VOCAB + 64  # the talker's codec table also holds special ids
NUM_STEPS = 15


def _spec(input_size: int) -> CodePredictorSpec:
    return CodePredictorSpec(
        hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=1e6, vocab_size=VOCAB,
        num_code_groups=16, input_size=input_size,
    )  # fmt: skip


def _random_weights(spec: CodePredictorSpec, seed: int) -> dict[str, np.ndarray]:
    """Variance-preserving random tensors in the release layout (torch Linear = [out, in])."""
    rng = np.random.default_rng(seed)
    hid, talker, inter, hd = spec.hidden_size, spec.input_size, spec.intermediate_size, spec.head_dim

    def linear(out_dim, in_dim):
        return (rng.standard_normal((out_dim, in_dim)) / np.sqrt(in_dim)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    pre = "talker.code_predictor."
    w = {
        "talker.model.codec_embedding.weight": rng.standard_normal((TALKER_VOCAB, talker)).astype(np.float32)
    }
    for j in range(NUM_STEPS):
        w[f"{pre}model.codec_embedding.{j}.weight"] = rng.standard_normal((VOCAB, talker)).astype(np.float32)
        w[f"{pre}lm_head.{j}.weight"] = linear(VOCAB, hid) * 3.0  # wide logits: clear top-1 margins
    for i in range(spec.num_hidden_layers):
        p = f"{pre}model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(hid)
        w[p + "post_attention_layernorm.weight"] = norm(hid)
        w[p + "self_attn.q_proj.weight"] = linear(spec.num_attention_heads * hd, hid)
        w[p + "self_attn.k_proj.weight"] = linear(spec.num_key_value_heads * hd, hid)
        w[p + "self_attn.v_proj.weight"] = linear(spec.num_key_value_heads * hd, hid)
        w[p + "self_attn.o_proj.weight"] = linear(hid, spec.num_attention_heads * hd)
        w[p + "self_attn.q_norm.weight"] = norm(hd)
        w[p + "self_attn.k_norm.weight"] = norm(hd)
        w[p + "mlp.gate_proj.weight"] = linear(inter, hid)
        w[p + "mlp.up_proj.weight"] = linear(inter, hid)
        w[p + "mlp.down_proj.weight"] = linear(hid, inter)
    w[pre + "model.norm.weight"] = norm(hid)
    if spec.has_input_projection:
        w[pre + "small_to_mtp_projection.weight"] = linear(hid, talker)
        w[pre + "small_to_mtp_projection.bias"] = (0.01 * rng.standard_normal(hid)).astype(np.float32)
    return w


# ---- numpy reference (one row at a time, float64) ----


def _np_rms(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def _np_rope(x, spec):  # x [n, S, hd], positions 0..S-1
    inv_freq = 1.0 / spec.rope_theta ** (np.arange(0, spec.head_dim, 2) / spec.head_dim)
    f = np.arange(x.shape[1])[:, None] * inv_freq[None]
    cos, sin = np.cos(np.concatenate([f, f], -1)), np.sin(np.concatenate([f, f], -1))
    half = spec.head_dim // 2
    return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin


def _np_decoder(spec, w, seq):  # seq [S, hidden] -> last position after the final norm [hidden]
    pre, eps, hd = "talker.code_predictor.model.", spec.rms_norm_eps, spec.head_dim
    nh, kvh, s = spec.num_attention_heads, spec.num_key_value_heads, seq.shape[0]
    x = seq
    for i in range(spec.num_hidden_layers):
        L = {k[len(f"{pre}layers.{i}.") :]: v for k, v in w.items() if k.startswith(f"{pre}layers.{i}.")}
        h = _np_rms(x, L["input_layernorm.weight"], eps)
        q = _np_rms(
            (h @ L["self_attn.q_proj.weight"].T).reshape(s, nh, hd), L["self_attn.q_norm.weight"], eps
        )
        k = _np_rms(
            (h @ L["self_attn.k_proj.weight"].T).reshape(s, kvh, hd), L["self_attn.k_norm.weight"], eps
        )
        v = (h @ L["self_attn.v_proj.weight"].T).reshape(s, kvh, hd).transpose(1, 0, 2)
        q, k = _np_rope(q.transpose(1, 0, 2), spec), _np_rope(k.transpose(1, 0, 2), spec)
        k, v = np.repeat(k, nh // kvh, 0), np.repeat(v, nh // kvh, 0)  # HF repeat_kv
        a = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        a = np.where(np.tril(np.ones((s, s), bool))[None], a, -np.inf)
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + (a @ v).transpose(1, 0, 2).reshape(s, nh * hd) @ L["self_attn.o_proj.weight"].T
        h = _np_rms(x, L["post_attention_layernorm.weight"], eps)
        g = h @ L["mlp.gate_proj.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ L["mlp.up_proj.weight"].T)) @ L["mlp.down_proj.weight"].T
    return _np_rms(x[-1], w[pre + "norm.weight"], eps)


def _np_sample(logits, u, temperature, top_k, top_p):
    """HF warpers on the full vocab (temperature -> top-k -> top-p), then Gumbel-max, noise by token id."""
    if temperature == 0:
        return int(np.argmax(logits))
    scores = logits / temperature
    if 0 < top_k < scores.size:
        scores = np.where(scores < np.sort(scores)[-top_k], -np.inf, scores)
    if top_p < 1.0:
        order = np.argsort(scores, kind="stable")  # ascending, like TopPLogitsWarper
        probs = np.exp(scores[order] - scores.max())
        remove = np.cumsum(probs / probs.sum()) <= 1 - top_p
        remove[-1] = False
        scores = scores.copy()
        scores[order[remove]] = -np.inf
    u = np.clip(u.astype(np.float64), cp.NOISE_MIN, cp.NOISE_MAX)
    return int(np.argmax(scores - np.log(-np.log(u))))


def _np_code_predictor(spec, w, past_hidden, code0, noise, temperature=0.0, top_k=0, top_p=1.0):
    """One row of the official loop -> codes [15], logits [15, V], next_embed [Ht]."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    pre = "talker.code_predictor."

    def project(x):
        if not spec.has_input_projection:
            return x
        return x @ w[pre + "small_to_mtp_projection.weight"].T + w[pre + "small_to_mtp_projection.bias"]

    embed = w["talker.model.codec_embedding.weight"][code0]
    seq, next_embed = [project(past_hidden), project(embed)], embed.copy()
    codes, logits = [], []
    for j in range(NUM_STEPS):
        step_logits = w[f"{pre}lm_head.{j}.weight"] @ _np_decoder(spec, w, np.stack(seq))
        code = _np_sample(step_logits, noise[j], temperature, top_k, top_p)
        embed = w[f"{pre}model.codec_embedding.{j}.weight"][code]
        seq.append(project(embed))
        next_embed += embed
        codes.append(code)
        logits.append(step_logits)
    return np.array(codes), np.stack(logits), next_embed


# ---- the graph under test ----


class Predictor:
    """A compiled tiny code predictor plus its weights and random inputs."""

    def __init__(self, input_size: int):
        self.spec = _spec(input_size)
        self.weights = _random_weights(self.spec, seed=input_size)
        self.model = model = cp.build_code_predictor(self.spec, input_size, self.weights)
        self.compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})

    def inputs(self, batch: int, seed: int = 7):
        """Random past_hidden [B, Ht], code0 [B] (any talker codec id) and uniform noise [B, 15, V]."""
        rng = np.random.default_rng(seed)
        past_hidden = rng.standard_normal((batch, self.spec.input_size)).astype(np.float32)
        code0 = rng.integers(0, TALKER_VOCAB, batch).astype(np.int64)
        noise = rng.random((batch, NUM_STEPS, VOCAB), dtype=np.float32)
        return past_hidden, code0, noise

    def run(self, past_hidden, code0, noise, temperature, top_k, top_p=None, compiled=None):
        batch = len(code0)
        feeds = {
            cp.PAST_HIDDEN: past_hidden,
            cp.CODE0: code0,
            cp.NOISE: noise,
            cp.TEMPERATURE: np.broadcast_to(np.asarray(temperature, np.float32), (batch,)).copy(),
            cp.TOP_K: np.broadcast_to(np.asarray(top_k, np.int64), (batch,)).copy(),
            cp.TOP_P: np.broadcast_to(
                np.asarray(1.0 if top_p is None else top_p, np.float32), (batch,)
            ).copy(),
        }
        compiled = compiled or self.compiled
        result = compiled.create_infer_request().infer(feeds)
        return {name: result[compiled.output(name)] for name in cp.OUTPUT_NAMES}


_COMPILED: dict[int, Predictor] = {}


def _predictor(input_size: int) -> Predictor:
    if input_size not in _COMPILED:
        _COMPILED[input_size] = Predictor(input_size)
    return _COMPILED[input_size]


@pytest.fixture(params=[64, 96], ids=["same-width-0.6B-style", "projected-1.7B-style"])
def predictor(request) -> Predictor:
    return _predictor(request.param)


@pytest.fixture
def projected_predictor() -> Predictor:
    """For the slower checks that need only one variant: the 1.7B style exercises every weight kind."""
    return _predictor(96)


def _reference_rows(p: Predictor, past_hidden, code0, noise, temperature, top_k, top_p=1.0):
    rows = []
    for b in range(len(code0)):
        t, k, pp = (np.broadcast_to(v, (len(code0),))[b] for v in (temperature, top_k, top_p))
        rows.append(_np_code_predictor(p.spec, p.weights, past_hidden[b], code0[b], noise[b], t, k, pp))
    return [np.stack(r) for r in zip(*rows, strict=True)]  # codes [B, 15], logits [B, 15, V], embed [B, Ht]


# ---- tests ----


def test_graph_exposes_named_inputs_and_outputs_with_dynamic_batch(predictor):
    inputs = {i.get_any_name(): i for i in predictor.compiled.inputs}
    outputs = {o.get_any_name(): o for o in predictor.compiled.outputs}
    assert set(inputs) == set(cp.INPUT_NAMES)
    assert set(outputs) == set(cp.OUTPUT_NAMES)
    assert inputs[cp.CODE0].get_element_type() == ov.Type.i64
    assert inputs[cp.TOP_K].get_element_type() == ov.Type.i64
    assert inputs[cp.NOISE].get_partial_shape().to_string() == f"[?,{NUM_STEPS},{VOCAB}]"
    assert outputs[cp.CODES].get_element_type() == ov.Type.i64
    assert outputs[cp.LOGITS].get_partial_shape().to_string() == f"[?,{NUM_STEPS},{VOCAB}]"
    assert outputs[cp.NEXT_EMBED].get_partial_shape().to_string() == f"[?,{predictor.spec.input_size}]"


def test_greedy_codes_logits_and_next_embed_match_numpy_reference(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    got = predictor.run(past_hidden, code0, noise, temperature=0.0, top_k=50)
    codes, logits, next_embed = _reference_rows(predictor, past_hidden, code0, noise, 0.0, 50)
    logit_diff = np.abs(got[cp.LOGITS] - logits).max()
    embed_diff = np.abs(got[cp.NEXT_EMBED] - next_embed).max()
    print(f"max |dlogit| {logit_diff:.2e} (|logit| <= {np.abs(logits).max():.1f}), |dembed| {embed_diff:.2e}")
    np.testing.assert_array_equal(got[cp.CODES], codes)
    assert logit_diff < 1e-4
    assert embed_diff < 1e-4
    assert len({tuple(row) for row in codes}) == 3  # the rows really differ


def test_gumbel_sampling_with_given_noise_matches_numpy_formula(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    got = predictor.run(past_hidden, code0, noise, temperature=0.9, top_k=50)
    codes, _, next_embed = _reference_rows(predictor, past_hidden, code0, noise, 0.9, 50)
    np.testing.assert_array_equal(got[cp.CODES], codes)
    np.testing.assert_allclose(got[cp.NEXT_EMBED], next_embed, atol=1e-4)
    # The formula applied to the graph's own logits picks the graph's codes at every step.
    for b in range(3):
        for j in range(NUM_STEPS):
            expected = _np_sample(got[cp.LOGITS][b, j].astype(np.float64), noise[b, j], 0.9, 50, 1.0)
            assert got[cp.CODES][b, j] == expected


def test_sampling_without_top_k_or_top_p_matches_numpy_formula(predictor):
    # every row unfiltered: the If takes the branch that never sorts the codebook
    past_hidden, code0, noise = predictor.inputs(3)
    got = predictor.run(past_hidden, code0, noise, temperature=0.9, top_k=0)
    codes, _, _ = _reference_rows(predictor, past_hidden, code0, noise, 0.9, 0)
    np.testing.assert_array_equal(got[cp.CODES], codes)
    for b in range(3):
        for j in range(NUM_STEPS):
            expected = _np_sample(got[cp.LOGITS][b, j].astype(np.float64), noise[b, j], 0.9, 0, 1.0)
            assert got[cp.CODES][b, j] == expected


def test_the_unfiltered_branch_has_no_topk_wider_than_one(predictor):
    """subtalker_top_k 0 once sorted the whole codebook 15 times per frame (6.5x slower synthesis)."""
    ifs = [op for op in predictor.model.get_ordered_ops() if op.get_type_name() == "If"]
    samplers = [op for op in ifs if len(op.get_function(1).get_parameters()) == 7]
    assert len(samplers) == NUM_STEPS
    for node in samplers:
        unfiltered = node.get_function(1)  # the else body: no row filters
        widths = [
            int(op.input_value(1).get_node().get_data())
            for op in unfiltered.get_ordered_ops()
            if op.get_type_name() == "TopK"
        ]
        assert widths == [1, 1]  # the sampled argmax and the greedy argmax


def test_sampled_codes_differ_from_greedy_codes(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    sampled = predictor.run(past_hidden, code0, noise, temperature=1.0, top_k=0)[cp.CODES]
    greedy = predictor.run(past_hidden, code0, noise, temperature=0.0, top_k=0)[cp.CODES]
    assert (sampled != greedy).mean() > 0.3


def test_top_p_filter_matches_hf_top_p_warper(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    top_p = np.array([0.3, 0.8, 0.95], np.float32)
    got = predictor.run(past_hidden, code0, noise, temperature=1.2, top_k=0, top_p=top_p)
    codes, _, _ = _reference_rows(predictor, past_hidden, code0, noise, 1.2, 0, top_p.astype(np.float64))
    np.testing.assert_array_equal(got[cp.CODES], codes)


def test_top_p_zero_keeps_only_the_best_token(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    got = predictor.run(past_hidden, code0, noise, temperature=1.0, top_k=0, top_p=0.0)
    greedy = predictor.run(past_hidden, code0, noise, temperature=0.0, top_k=0)
    np.testing.assert_array_equal(got[cp.CODES], greedy[cp.CODES])


def test_batch_rows_equal_single_row_runs(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    settings = {"temperature": [0.0, 0.9, 1.3], "top_k": [50, 5, 0], "top_p": [1.0, 0.9, 1.0]}
    batch = predictor.run(past_hidden, code0, noise, **settings)
    for b in range(3):
        row = {key: values[b] for key, values in settings.items()}
        single = predictor.run(past_hidden[b : b + 1], code0[b : b + 1], noise[b : b + 1], **row)
        np.testing.assert_array_equal(batch[cp.CODES][b], single[cp.CODES][0])
        np.testing.assert_allclose(batch[cp.LOGITS][b], single[cp.LOGITS][0], atol=1e-5)
        np.testing.assert_allclose(batch[cp.NEXT_EMBED][b], single[cp.NEXT_EMBED][0], atol=1e-5)


def test_temperature_zero_rows_are_greedy_while_other_rows_sample(predictor):
    past_hidden, code0, noise = predictor.inputs(4)
    temperature = np.array([0.0, 1.0, 0.0, 0.7], np.float32)
    got = predictor.run(past_hidden, code0, noise, temperature=temperature, top_k=0)
    codes, _, _ = _reference_rows(predictor, past_hidden, code0, noise, temperature.astype(np.float64), 0)
    greedy = predictor.run(past_hidden, code0, noise, temperature=0.0, top_k=0)[cp.CODES]
    np.testing.assert_array_equal(got[cp.CODES], codes)
    np.testing.assert_array_equal(got[cp.CODES][[0, 2]], greedy[[0, 2]])
    assert (got[cp.CODES][[1, 3]] != greedy[[1, 3]]).any()


def test_top_k_one_equals_greedy_whatever_the_temperature(predictor):
    past_hidden, code0, noise = predictor.inputs(3)
    got = predictor.run(past_hidden, code0, noise, temperature=[0.5, 1.0, 3.0], top_k=1)
    greedy = predictor.run(past_hidden, code0, noise, temperature=0.0, top_k=1)
    np.testing.assert_array_equal(got[cp.CODES], greedy[cp.CODES])


def test_sampled_code_frequencies_follow_softmax_of_top_k_logits(projected_predictor):
    """One row repeated 4000 times with fresh noise: the first code's histogram ~ softmax(top-10 / T)."""
    draws, top_k, temperature = 4000, 10, 0.7
    past_hidden, code0, _ = projected_predictor.inputs(1)
    noise = np.random.default_rng(11).random((draws, NUM_STEPS, VOCAB), dtype=np.float32)
    got = projected_predictor.run(
        np.repeat(past_hidden, draws, 0), np.repeat(code0, draws), noise, temperature=temperature, top_k=top_k
    )
    first_logits = got[cp.LOGITS][0, 0].astype(np.float64)
    allowed = np.argsort(first_logits)[-top_k:]
    expected = np.zeros(VOCAB)
    expected[allowed] = np.exp((first_logits[allowed] - first_logits.max()) / temperature)
    expected /= expected.sum()
    observed = np.bincount(got[cp.CODES][:, 0], minlength=VOCAB) / draws
    total_variation = 0.5 * np.abs(observed - expected).sum()
    print(f"total variation {total_variation:.3f}, p(top1) {expected.max():.2f}")
    assert set(np.unique(got[cp.CODES][:, 0])) <= set(allowed)
    assert total_variation < 0.05


def test_talker_hidden_that_disagrees_with_the_spec_raises_checkpoint_error():
    spec = _spec(96)
    with pytest.raises(CheckpointError, match="input_size"):
        cp.build_code_predictor(spec, 64, _random_weights(spec, seed=0))


def test_missing_tensor_raises_checkpoint_error_naming_it():
    spec = _spec(96)
    weights = _random_weights(spec, seed=0)
    del weights["talker.code_predictor.lm_head.7.weight"]
    with pytest.raises(CheckpointError, match=r"lm_head\.7\.weight"):
        cp.build_code_predictor(spec, 96, weights)


def test_int8_weight_compression_compresses_each_shared_matrix_once_and_stays_close(projected_predictor):
    """nncf needs unique node names; every release matrix must be one Constant, not one per unrolled step."""
    spec = projected_predictor.spec
    model = cp.build_code_predictor(spec, spec.input_size, projected_predictor.weights)
    compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_SYM)
    int8_constants = [
        op
        for op in compressed.get_ops()
        if op.get_type_name() == "Constant" and op.get_element_type() == ov.Type.i8
    ]
    # lm_head + codec_embedding per step, the talker's codec table, 4 matrices per layer (q/k/v and
    # gate/up stacked), the projection.
    matrices = 2 * NUM_STEPS + 1 + 4 * spec.num_hidden_layers + int(spec.has_input_projection)
    assert len(int8_constants) == matrices
    compiled = ov.Core().compile_model(compressed, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    past_hidden, code0, noise = projected_predictor.inputs(2)
    int8_logits = projected_predictor.run(
        past_hidden, code0, noise, temperature=0.0, top_k=0, compiled=compiled
    )[cp.LOGITS]
    f32_logits = projected_predictor.run(past_hidden, code0, noise, temperature=0.0, top_k=0)[cp.LOGITS]
    # Only step 0 sees identical inputs: one flipped code changes every later step's input.
    drift = np.abs(int8_logits[:, 0] - f32_logits[:, 0])
    print(f"int8 step-0 logit drift max {drift.max():.3f} mean {drift.mean():.4f}")
    assert drift.mean() < 0.05 * np.abs(f32_logits[:, 0]).mean()
