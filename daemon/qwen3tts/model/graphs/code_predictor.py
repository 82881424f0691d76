"""The code predictor as one OpenVINO graph per frame for a whole batch (docs/architecture.md, decision 4).

Mirrors `Qwen3TTSTalkerCodePredictorModelForConditionalGeneration.generate` as called from
`Qwen3TTSTalkerForConditionalGeneration.forward` (qwen_tts/core/models/modeling_qwen3_tts.py): the
15 codebook steps are unrolled with an in-graph KV of `num_code_groups` (16) positions and the
sampling runs inside the graph, so a frame costs one infer call instead of 15 nested `generate()`s.

KV positions: 0 = past_hidden, 1 = talker.codec_embedding(code0), 1+j = codec_embedding[j-1](c_j);
each goes through `small_to_mtp_projection` when the checkpoint has one (1.7B style).
Step j (0..14) runs lm_head[j] on the last position and samples c_{j+1}.

Sampling (HF processor order temperature -> top-k -> top-p, then multinomial), per row and per step:
    scaled[v] = logits[v] / temperature
    keep      = the top_k largest logits (top_k <= 0 or >= V keeps all), then HF top-p on
                softmax(scaled over keep): a token stays while the probability mass of the tokens ranked
                strictly above it is < top_p (top_p >= 1 keeps all, exactly like HF's skipped processor)
    u         = clamp(noise[b, j, v], NOISE_MIN, NOISE_MAX)      # noise is indexed by TOKEN ID v
    code      = argmax over v in keep of  scaled[v] - log(-log(u))   (Gumbel-max == softmax sampling)
A row with temperature == 0 takes argmax(logits) instead (greedy). Ties in top-k and argmax go to the
lower token id (stable TopK), like numpy/torch argmax; HF's top-k would also keep every logit tied with
the k-th (a measure-zero difference). The arithmetic is f32 in graph order: a host reference in
float64 agrees except where two Gumbel scores tie to ~1e-6.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.errors import CheckpointError
from qwen3tts.model.graphs import layers, transformer
from qwen3tts.model.graphs.gumbel_sampler import NOISE_MAX as NOISE_MAX  # part of this graph's contract
from qwen3tts.model.graphs.gumbel_sampler import NOISE_MIN as NOISE_MIN
from qwen3tts.model.graphs.gumbel_sampler import GumbelTopKSampler
from qwen3tts.model.graphs.layers import i64
from qwen3tts.model.spec import CodePredictorSpec

# Input names.
PAST_HIDDEN = "past_hidden"  # [B, H_talker] f32: talker final hidden state (after its norm) at the last step
CODE0 = "code0"  # [B] i64: code 0 of the frame, sampled from the talker
NOISE = "noise"  # [B, num_code_groups - 1, V] f32: uniform(0, 1) from the host, indexed by token id
TEMPERATURE = "temperature"  # [B] f32: <= 0 = greedy (argmax)
TOP_K = "top_k"  # [B] i64: <= 0 or >= V means no top-k filter
TOP_P = "top_p"  # [B] f32: >= 1 means no top-p filter (the official default)
INPUT_NAMES = (PAST_HIDDEN, CODE0, NOISE, TEMPERATURE, TOP_K, TOP_P)

# Output names.
CODES = "codes"  # [B, num_code_groups - 1] i64: codes 1..15 of the frame
NEXT_EMBED = "next_embed"  # [B, H_talker] f32: summed codec embeddings = next talker input minus text track
LOGITS = "logits"  # [B, num_code_groups - 1, V] f32: raw lm_head logits of each step (pre-temperature)
OUTPUT_NAMES = (CODES, NEXT_EMBED, LOGITS)

PREFIX = "talker.code_predictor"
TALKER_CODEC_EMBEDDING = "talker.model.codec_embedding.weight"
NORM = f"{PREFIX}.model.norm.weight"


def build_code_predictor(
    spec: CodePredictorSpec, talker_hidden: int, weights: Mapping[str, np.ndarray]
) -> ov.Model:
    """Build the batched, unrolled code predictor with in-graph sampling.

    Mirrors `Qwen3TTSTalkerCodePredictorModelForConditionalGeneration` (+ `small_to_mtp_projection`)
    driven by `generate(max_new_tokens=15)`, plus the talker's next-input sum of codec embeddings.
    Weights use the release names and are trusted to have the shapes checkpoint.py checked.
    """
    if talker_hidden != spec.input_size:
        raise CheckpointError(
            f"code predictor input_size {spec.input_size} != talker hidden_size {talker_hidden}"
        )
    params = _parameters(spec, talker_hidden)
    shared = _SharedWeights(weights)
    sampler = GumbelTopKSampler(params[TOP_K], params[TEMPERATURE], params[TOP_P], spec.vocab_size)
    num_steps = spec.num_code_groups - 1
    noise_steps = ops.split(params[NOISE], i64(1), num_steps).outputs()  # num_steps x [B, 1, V]

    first_embed = ops.gather(shared[TALKER_CODEC_EMBEDDING], params[CODE0], i64(0))  # [B, Ht]
    step_input = ops.concat([_unsqueeze(params[PAST_HIDDEN], 1), _unsqueeze(first_embed, 1)], 1)  # [B, 2, Ht]
    embed_sum = first_embed
    kv_cache = _GrowingKV()
    codes, logits = [], []
    for step in range(num_steps):
        projected = _project_input(spec, shared, step_input)  # [B, S, H]
        last = ops.gather(_decoder_forward(spec, shared, projected, kv_cache), i64(-1), i64(1))  # [B, H]
        last = layers.rms_norm(last, shared.array(NORM), spec.rms_norm_eps)  # [B, H]
        step_logits = layers.matmul_t(last, shared[f"{PREFIX}.lm_head.{step}.weight"])  # [B, V]
        code = sampler.sample(step_logits, ops.squeeze(noise_steps[step], i64([1])))  # [B]
        codes.append(code)
        logits.append(step_logits)
        table = shared[f"{PREFIX}.model.codec_embedding.{step}.weight"]
        code_embed = ops.gather(table, code, i64(0))  # [B, Ht]
        embed_sum = ops.add(embed_sum, code_embed)
        step_input = _unsqueeze(code_embed, 1)  # [B, 1, Ht]

    results = [
        layers.named_result(ops.concat([_unsqueeze(c, 1) for c in codes], 1), CODES),  # [B, steps]
        layers.named_result(embed_sum, NEXT_EMBED),  # [B, Ht]
        layers.named_result(ops.concat([_unsqueeze(x, 1) for x in logits], 1), LOGITS),  # [B, steps, V]
    ]
    return ov.Model(results, [params[name] for name in INPUT_NAMES], "code_predictor")


def _parameters(spec: CodePredictorSpec, talker_hidden: int) -> dict[str, ov.Node]:
    shapes_and_types = {
        PAST_HIDDEN: ([-1, talker_hidden], np.float32),
        CODE0: ([-1], np.int64),
        NOISE: ([-1, spec.num_code_groups - 1, spec.vocab_size], np.float32),
        TEMPERATURE: ([-1], np.float32),
        TOP_K: ([-1], np.int64),
        TOP_P: ([-1], np.float32),
    }
    return {
        name: layers.named_parameter(shape, dtype, name) for name, (shape, dtype) in shapes_and_types.items()
    }


class _SharedWeights:
    """One Constant per release tensor, reused by all 15 unrolled steps.

    layers.linear / transformer.decoder_layer create a fresh Constant on every call; unrolled 15 times that
    would hold 15 copies of every matrix in the graph (4.7 GB f32 at the real size), so the matrices are
    made once here and multiplied with `_linear`.
    """

    def __init__(self, weights: Mapping[str, np.ndarray]):
        self._weights = weights
        self._nodes: dict[str, ov.Node] = {}

    def __getitem__(self, key: str) -> ov.Node:
        if key not in self._nodes:
            if key not in self._weights:
                raise CheckpointError(f"model.safetensors: tensor {key} missing")
            self._nodes[key] = layers.weight(self._weights, key)
        return self._nodes[key]

    def array(self, key: str) -> np.ndarray:
        if key not in self._weights:
            raise CheckpointError(f"model.safetensors: tensor {key} missing")
        return self._weights[key]

    def qkv(self, attn_prefix: str) -> ov.Node:
        """q/k/v projections stacked into one matrix (layers.stacked_weight), made once."""
        return self._stacked(attn_prefix, layers.qkv_weight, ("q_proj", "k_proj", "v_proj"))

    def gate_up(self, mlp_prefix: str) -> ov.Node:
        """gate/up projections stacked into one matrix, made once."""
        return self._stacked(mlp_prefix, layers.gate_up_weight, ("gate_proj", "up_proj"))

    def _stacked(self, prefix: str, make, parts: tuple[str, ...]) -> ov.Node:
        key = f"{prefix}.{'_'.join(parts)}"
        if key not in self._nodes:
            for part in parts:
                self.array(f"{prefix}.{part}.weight")  # a missing tensor is named, not a KeyError
            self._nodes[key] = make(self._weights, prefix)
        return self._nodes[key]


class _GrowingKV:
    """The in-graph KV cache: per layer, K and V [B, kvh, T, hd] grow by the positions of each step."""

    def __init__(self):
        self.length = 0  # positions already cached (static: the steps are unrolled)
        self._past: dict[int, tuple[ov.Node, ov.Node]] = {}

    def update(self, layer_index: int, k: ov.Node, v: ov.Node) -> tuple[ov.Node, ov.Node]:
        if layer_index in self._past:
            past_k, past_v = self._past[layer_index]
            k, v = ops.concat([past_k, k], 2), ops.concat([past_v, v], 2)  # [B, kvh, T, hd]
        self._past[layer_index] = (k, v)
        return k, v


def _project_input(spec: CodePredictorSpec, shared: _SharedWeights, x: ov.Node) -> ov.Node:
    """small_to_mtp_projection: Linear(talker hidden -> hidden) with bias on 1.7B, Identity on 0.6B."""
    if not spec.has_input_projection:
        return x
    key = f"{PREFIX}.small_to_mtp_projection"
    return ops.add(layers.matmul_t(x, shared[f"{key}.weight"]), shared[f"{key}.bias"])


def _decoder_forward(
    spec: CodePredictorSpec, shared: _SharedWeights, x: ov.Node, kv_cache: _GrowingKV
) -> ov.Node:
    """The decoder layers (before the final norm) on the S new positions x [B, S, H]."""
    num_new = x.get_output_partial_shape(0)[1].get_length()
    positions = np.arange(kv_cache.length, kv_cache.length + num_new)
    position_ids = layers.const([positions], np.int64)  # [1, S]
    rope = transformer.rope_tables(position_ids, spec.head_dim, spec.rope_theta)  # 2 x [1, 1, S, hd]
    # A single new position sees every cached one; the first step's two positions need a causal mask.
    mask = None if num_new == 1 else layers.const(np.tril(np.ones((num_new, num_new), bool)), bool)  # [S, T]
    for i in range(spec.num_hidden_layers):
        prefix = f"{PREFIX}.model.layers.{i}"
        key = f"{prefix}.input_layernorm.weight"
        h = layers.rms_norm(x, shared.array(key), spec.rms_norm_eps)
        x = ops.add(x, _self_attention(spec, shared, h, prefix, rope, mask, kv_cache, i))
        key = f"{prefix}.post_attention_layernorm.weight"
        h = layers.rms_norm(x, shared.array(key), spec.rms_norm_eps)
        mlp = f"{prefix}.mlp"
        x = ops.add(x, layers.swiglu(h, shared.gate_up(mlp), shared[f"{mlp}.down_proj.weight"]))
    kv_cache.length += num_new
    return x


def _self_attention(
    spec: CodePredictorSpec,
    shared: _SharedWeights,
    h: ov.Node,
    prefix: str,
    rope: tuple[ov.Node, ov.Node],
    mask: ov.Node | None,
    kv_cache: _GrowingKV,
    layer_index: int,
) -> ov.Node:
    """Qwen3 attention (q/k RMSNorm per head, RoPE, GQA): transformer.self_attention with shared weights.

    Differs in taking shared Constants (see _SharedWeights; q/k/v are one stacked matrix) and in the
    single-position steps (14 of 15 run once per layer): see _one_query_attention.
    """
    dims = transformer.AttentionDims.from_spec(spec)
    attn_prefix = f"{prefix}.self_attn"
    norms = {
        key: shared.array(key) for key in (f"{attn_prefix}.q_norm.weight", f"{attn_prefix}.k_norm.weight")
    }
    width = dims.num_heads * dims.head_dim
    if mask is None:
        qkv = shared.qkv(attn_prefix)
        attn = _one_query_attention(h, qkv, norms, attn_prefix, dims, rope, kv_cache, layer_index)
        attn = ops.reshape(attn, i64([0, 1, width]), special_zero=True)  # [B, 1, nh*hd]
    else:
        q, k, v = transformer.qkv_heads(h, shared.qkv(attn_prefix), norms, attn_prefix, dims)  # [B, n, S, hd]
        q, k = transformer.apply_rope(q, *rope), transformer.apply_rope(k, *rope)
        k_all, v_all = kv_cache.update(layer_index, k, v)  # [B, kvh, T, hd]
        k_all, v_all = (
            transformer.repeat_kv(k_all, dims),
            transformer.repeat_kv(v_all, dims),
        )  # [B, nh, T, hd]
        attn = ops.scaled_dot_product_attention(q, k_all, v_all, mask, causal=False)  # [B, nh, S, hd]
        attn = ops.transpose(attn, i64([0, 2, 1, 3]))  # [B, S, nh, hd]
        attn = ops.reshape(attn, i64([0, 0, width]), special_zero=True)  # [B, S, nh*hd]
    return layers.matmul_t(attn, shared[f"{attn_prefix}.o_proj.weight"])


def _one_query_attention(
    h: ov.Node,
    qkv: ov.Node,
    norms: Mapping[str, np.ndarray],
    prefix: str,
    dims: transformer.AttentionDims,
    rope: tuple[ov.Node, ov.Node],
    kv_cache: _GrowingKV,
    layer_index: int,
) -> ov.Node:
    """Attention of ONE new position h [B, 1, H] over the cache, without Transposes or GQA Broadcasts.

    With S = 1 the [B, S, heads, hd] -> [B, heads, S, hd] transposes are plain reshapes, and the query
    heads of one KV head (head i uses KV head i // groups, as HF repeat_kv) are grouped as
    [B, kvh, groups, hd], so two small MatMuls replace repeat_kv + SDPA. Same math as the SDPA path
    (softmax(q k^T / sqrt(hd)) v), to f32 rounding. Returns [B, kvh, groups, hd] (= [B, 1, nh, hd]).
    """
    hd, kvh, groups = dims.head_dim, dims.num_kv_heads, dims.kv_groups
    projected = layers.matmul_t(h, qkv)  # [B, 1, (nh + 2 kvh) * hd]
    q, k, v = ops.variadic_split(projected, i64(-1), i64([dims.num_heads * hd, kvh * hd, kvh * hd])).outputs()
    cos, sin = rope  # [1, 1, 1, hd]: broadcasts over [B, 1, heads, hd]
    eps = dims.rms_norm_eps
    q = ops.reshape(q, i64([0, 0, dims.num_heads, hd]), special_zero=True)  # [B, 1, nh, hd]
    q = transformer.apply_rope(layers.rms_norm(q, norms[f"{prefix}.q_norm.weight"], eps), cos, sin)
    k = ops.reshape(k, i64([0, 0, kvh, hd]), special_zero=True)  # [B, 1, kvh, hd]
    k = transformer.apply_rope(layers.rms_norm(k, norms[f"{prefix}.k_norm.weight"], eps), cos, sin)
    k = ops.reshape(k, i64([0, kvh, 1, hd]), special_zero=True)  # [B, kvh, 1, hd]
    v = ops.reshape(v, i64([0, kvh, 1, hd]), special_zero=True)  # [B, kvh, 1, hd]
    k_all, v_all = kv_cache.update(layer_index, k, v)  # [B, kvh, T, hd]
    q = ops.reshape(q, i64([0, kvh, groups, hd]), special_zero=True)  # [B, kvh, groups, hd]
    q = ops.multiply(q, layers.const(1.0 / np.sqrt(hd)))
    scores = ops.matmul(q, k_all, transpose_a=False, transpose_b=True)  # [B, kvh, groups, T]
    return ops.matmul(ops.softmax(scores, -1), v_all, transpose_a=False, transpose_b=False)  # [B,kvh,g,hd]


def _unsqueeze(x: ov.Node, axis: int) -> ov.Node:
    return ops.unsqueeze(x, i64([axis]))
