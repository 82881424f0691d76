"""The Qwen3 transformer block in OpenVINO opsets: RoPE, masks, q/k-normed GQA attention, the decoder layer.

Mirrors `rotate_half` / `apply_rotary_pos_emb`, `Qwen3TTSTalkerAttention` and the decoder layer of
`qwen_tts/core/models/modeling_qwen3_tts.py`; built from the primitives of layers.py. Pure functions, as
there: graph outputs and numpy weights in, graph outputs out.

- `rope_tables()` returns `(cos, sin)` of shape `[B, 1, S, head_dim]`; `float_attention_mask()` returns an
  additive mask `[B, 1, S, T]` (0 where allowed, f32 min elsewhere).
- A `KVUpdate` callable decides where K/V come from: `(layer_index, k_new, v_new) -> (k_all, v_all)`, all
  `[B, kv_heads, *, head_dim]`. The talker passes a stateful cache (talker.py) that inserts ReadValue ->
  Gather(beam_idx) -> Concat.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.layers import (
    F32_MIN,
    Output,
    const,
    dim,
    i64,
    linear,
    matmul_t,
    qkv_weight,
    rms_norm,
    swiglu_mlp,
)

KVUpdate = Callable[[int, Output, Output], tuple[Output, Output]]


@dataclass(frozen=True)
class AttentionDims:
    """Head layout and norm epsilon of one decoder; built from a TalkerSpec or CodePredictorSpec."""

    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float

    @classmethod
    def from_spec(cls, spec) -> AttentionDims:
        """Accepts any spec with num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps."""
        return cls(spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim, spec.rms_norm_eps)

    @property
    def kv_groups(self) -> int:
        return self.num_heads // self.num_kv_heads


# ---------------------------------------------------------------- positions and masks


def inverse_frequencies(head_dim: int, theta: float) -> np.ndarray:
    """RoPE inverse frequencies [head_dim/2] f32, computed as HF's default rope init does."""
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / head_dim
    return (1.0 / (theta**exponents)).astype(np.float32)


def rope_tables(position_ids: Output, head_dim: int, theta: float) -> tuple[ov.Node, ov.Node]:
    """cos, sin [B, 1, S, head_dim] from position_ids [B, S] (any leading shape works, see below).

    The paged-attention pass rewrites position_ids to [T] and unsqueezes it to [T, 1]; the same
    arithmetic then yields [T, 1, 1, head_dim], which broadcasts against its [T, heads, 1, head_dim].
    """
    positions = ops.unsqueeze(ops.convert(position_ids, "f32"), i64([-1]))  # [B, S, 1]
    freqs = ops.multiply(positions, const(inverse_frequencies(head_dim, theta)))  # [B, S, D/2]
    angles = ops.concat([freqs, freqs], -1)  # [B, S, D]
    cos = ops.unsqueeze(ops.cos(angles), i64([1]))  # [B, 1, S, D]
    sin = ops.unsqueeze(ops.sin(angles), i64([1]))  # [B, 1, S, D]
    return cos, sin


def rotate_half(x: Output) -> ov.Node:
    """concat(-x2, x1) where x1, x2 are the halves of the last axis (of static size; rank-4 x).

    Written as Slice / Multiply(-1) / Concat, the form OpenVINO's RoPE fusion recognises: with
    apply_rope it becomes one RoPE kernel per tensor instead of Split + Concat + five eltwise ops
    (same arithmetic; Split and Concat were reference kernels on the decode step path).
    """
    output = x.output(0) if isinstance(x, ov.Node) else x
    half = output.get_partial_shape()[-1].get_length() // 2
    last = output.get_partial_shape().rank.get_length() - 1
    x1 = ops.slice(x, i64([0]), i64([half]), i64([1]), i64([last]))
    x2 = ops.slice(x, i64([half]), i64([np.iinfo(np.int32).max]), i64([1]), i64([last]))
    return ops.concat([ops.multiply(x2, const(-1.0)), x1], -1)


def apply_rope(x: Output, cos: Output, sin: Output) -> ov.Node:
    """x * cos + rotate_half(x) * sin, x [B, heads, S, D]."""
    return ops.add(ops.multiply(x, cos), ops.multiply(rotate_half(x), sin))


def float_attention_mask(attention_mask: Output, query_len: Output) -> ov.Node:
    """Additive mask [B, 1, S, T] from attention_mask [B, T] (1 = real token) and S = query_len.

    Query i sits at absolute position T - S + i and may see keys 0..T-S+i that are not padding.
    `query_len` is a 0-d i64 output. Nothing else may read attention_mask: the paged pass deletes it
    and replaces this whole subgraph.
    """
    total = ops.gather(ops.shape_of(attention_mask, "i64"), i64(1), i64(0))  # T, 0-d
    key_pos = ops.range(i64(0), total, i64(1), "i64")  # [T]
    query_pos = ops.range(ops.subtract(total, query_len), total, i64(1), "i64")  # [S]
    causal = ops.less_equal(ops.unsqueeze(key_pos, i64([0])), ops.unsqueeze(query_pos, i64([1])))  # [S, T]
    not_padding = ops.not_equal(ops.unsqueeze(attention_mask, i64([1, 2])), i64(0))  # [B, 1, 1, T]
    allowed = ops.logical_and(ops.unsqueeze(causal, i64([0, 1])), not_padding)  # [B, 1, S, T]
    return ops.select(allowed, const(0.0), const(F32_MIN))


# ---------------------------------------------------------------- attention


def split_heads(t: Output, num_heads: int, head_dim: int, norm: np.ndarray | None, eps: float, name=None):
    """[B, S, heads*D] -> [B, heads, S, D], with the per-head RMSNorm gain `norm` if given."""
    t = ops.reshape(t, i64([0, 0, num_heads, head_dim]), special_zero=True)  # [B, S, h, D]
    if norm is not None:
        t = rms_norm(t, norm, eps, name=name)
    return ops.transpose(t, i64([0, 2, 1, 3]))  # [B, h, S, D]


def project_heads(
    h: Output,
    weights: Mapping[str, np.ndarray],
    prefix: str,
    num_heads: int,
    head_dim: int,
    norm_key: str | None,
    eps: float,
) -> ov.Node:
    """Linear `{prefix}` -> [B, heads, S, head_dim], with the per-head RMSNorm `norm_key` if given."""
    norm = weights[norm_key] if norm_key is not None else None
    return split_heads(linear(h, weights, prefix), num_heads, head_dim, norm, eps, name=norm_key)


def qkv_heads(
    h: Output, qkv: Output, weights: Mapping[str, np.ndarray], prefix: str, dims: AttentionDims
) -> tuple[ov.Node, ov.Node, ov.Node]:
    """q [B, h, S, D], k and v [B, kvh, S, D] from one MatMul over the stacked `qkv` weight.

    q and k get their per-head RMSNorm (`{prefix}.q_norm`, `{prefix}.k_norm`); v none.
    """
    q_width, kv_width = dims.num_heads * dims.head_dim, dims.num_kv_heads * dims.head_dim
    projected = matmul_t(h, qkv)  # [B, S, q + 2 kv]
    q, k, v = ops.variadic_split(projected, i64(-1), i64([q_width, kv_width, kv_width])).outputs()
    eps, q_norm, k_norm = dims.rms_norm_eps, f"{prefix}.q_norm.weight", f"{prefix}.k_norm.weight"
    q = split_heads(q, dims.num_heads, dims.head_dim, weights[q_norm], eps)
    k = split_heads(k, dims.num_kv_heads, dims.head_dim, weights[k_norm], eps)
    v = split_heads(v, dims.num_kv_heads, dims.head_dim, None, eps)
    return q, k, v


def repeat_kv(kv: Output, dims: AttentionDims) -> Output:
    """GQA expansion [B, kvh, T, D] -> [B, heads, T, D] as Unsqueeze -> Broadcast -> Reshape.

    This exact pattern (HF `repeat_kv`) is what paged_attention_transformation reads the KV head count
    from; a Gather on the head axis would not convert.
    """
    if dims.kv_groups == 1:
        return kv
    shape = ops.shape_of(kv, "i64")
    target = ops.concat(
        [dim(shape, 0), dim(shape, 1), i64([dims.kv_groups]), dim(shape, 2), dim(shape, 3)], 0
    )  # [B, kvh, groups, T, D]
    expanded = ops.broadcast(ops.unsqueeze(kv, i64([2])), target)  # [B, kvh, groups, T, D]
    return ops.reshape(expanded, i64([0, dims.num_heads, -1, dims.head_dim]), special_zero=True)  # [B,h,T,D]


def self_attention(
    x: Output,
    weights: Mapping[str, np.ndarray],
    prefix: str,
    dims: AttentionDims,
    rope: tuple[Output, Output],
    mask: Output,
    kv_update: KVUpdate,
    layer_index: int,
) -> ov.Node:
    """Qwen3 attention on normed input x [B, S, hidden]; returns o_proj output [B, S, hidden].

    q/k/v come from one stacked MatMul; q/k get per-head RMSNorm (`q_norm`, `k_norm`) then RoPE; SDPA
    v13 with the explicit float mask and the default 1/sqrt(head_dim) scale.
    """
    q, k, v = qkv_heads(x, qkv_weight(weights, prefix), weights, prefix, dims)
    cos, sin = rope
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k_all, v_all = kv_update(layer_index, k, v)  # [B, kvh, T, D]
    return attend(q, k_all, v_all, mask, dims, weights, prefix)


def attend(
    q: Output,
    k_all: Output,
    v_all: Output,
    mask: Output,
    dims: AttentionDims,
    weights: Mapping[str, np.ndarray],
    prefix: str,
) -> ov.Node:
    """GQA scaled-dot-product attention of q [B,h,S,D] over k/v [B,kvh,T,D], then `{prefix}.o_proj`.

    The SDPA keeps an explicit mask and the Unsqueeze/Broadcast/Reshape GQA expansion: the pattern
    paged_attention_transformation recognises.
    """
    attn = ops.scaled_dot_product_attention(
        q, repeat_kv(k_all, dims), repeat_kv(v_all, dims), mask, causal=False
    )  # [B, h, S, D]
    attn = ops.transpose(attn, i64([0, 2, 1, 3]))  # [B, S, h, D]
    attn = ops.reshape(attn, i64([0, 0, dims.num_heads * dims.head_dim]), special_zero=True)  # [B, S, h*D]
    return linear(attn, weights, f"{prefix}.o_proj")


def decoder_layer(
    x: Output,
    weights: Mapping[str, np.ndarray],
    prefix: str,
    dims: AttentionDims,
    rope: tuple[Output, Output],
    mask: Output,
    kv_update: KVUpdate,
    layer_index: int,
) -> ov.Node:
    """One pre-norm Qwen3 block `{prefix}` (e.g. `talker.model.layers.3`): x + attn, then x + MLP."""
    norm_key = f"{prefix}.input_layernorm.weight"
    h = rms_norm(x, weights[norm_key], dims.rms_norm_eps, name=norm_key)
    attn = self_attention(h, weights, f"{prefix}.self_attn", dims, rope, mask, kv_update, layer_index)
    x = ops.add(x, attn)
    norm_key = f"{prefix}.post_attention_layernorm.weight"
    h = rms_norm(x, weights[norm_key], dims.rms_norm_eps, name=norm_key)
    return ops.add(x, swiglu_mlp(h, weights, f"{prefix}.mlp"))
