"""The codec decoder's transformer (Qwen3TTSTokenizerV2DecoderTransformerModel) for streaming chunks.

Each layer carries the RoPE-rotated keys and the values of the last sliding_window - 1 frames, the
most a query can see besides itself (transformers' sliding-window mask allows key k for query q iff
q - sliding_window < k <= q); `position` counts the frames decoded so far, since the RoPE angles and
the mask use absolute positions, exactly as one full decode would. The frame count T is read from the
input's shape, so the same graph serves static and dynamic chunk lengths.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.codec_layers import CarriedState, last
from qwen3tts.model.graphs.layers import F32_MIN, Output, const, i64, linear, rms_norm, swiglu_mlp
from qwen3tts.model.graphs.transformer import AttentionDims, apply_rope, attend, project_heads, rope_tables
from qwen3tts.model.spec import CodecDecoderSpec

POSITION = "position"  # state [1] i64: frames decoded so far in this stream
_PREFIX = "decoder."


def _sliding_window_mask(start: Output, num_frames: Output, past: int, window: int) -> ov.Node:
    """Additive mask [B, 1, T, past + T]: in row b, the query at start[b] + i sees the key at
    start[b] - past + j iff that key exists (>= 0), is not in the future and lies within the window
    (transformers' sliding mask). `start` [B] is each stream's position."""
    first = ops.unsqueeze(start, i64([1]))  # [B, 1]
    query_pos = ops.add(ops.range(i64(0), num_frames, i64(1), "i64"), first)  # [B, T]
    key_pos = ops.add(
        ops.range(i64(0), ops.add(num_frames, i64(past)), i64(1), "i64"), ops.subtract(first, i64(past))
    )  # [B, past + T]
    q = ops.unsqueeze(query_pos, i64([2]))  # [B, T, 1]
    k = ops.unsqueeze(key_pos, i64([1]))  # [B, 1, past + T]
    allowed = ops.logical_and(
        ops.logical_and(ops.greater_equal(k, i64(0)), ops.less_equal(k, q)),
        ops.greater(k, ops.subtract(q, i64(window))),
    )  # [B, T, past + T]
    mask = ops.select(allowed, const(0.0), const(F32_MIN))
    return ops.unsqueeze(mask, i64([1]))  # [B, 1, T, past + T]


def _attention(
    x: Output,
    weights: Mapping[str, np.ndarray],
    prefix: str,
    dims: AttentionDims,
    rope: tuple[Output, Output],
    mask: Output,
    state: CarriedState,
    past: int,
) -> ov.Node:
    """Qwen3TTSTokenizerV2DecoderAttention (no q/k norm, no bias) over [cached window | this chunk]."""
    q = project_heads(x, weights, f"{prefix}.q_proj", dims.num_heads, dims.head_dim, None, 0.0)  # [B,h,T,D]
    k = project_heads(x, weights, f"{prefix}.k_proj", dims.num_kv_heads, dims.head_dim, None, 0.0)
    v = project_heads(x, weights, f"{prefix}.v_proj", dims.num_kv_heads, dims.head_dim, None, 0.0)
    cos, sin = rope
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k_all = ops.concat([state.read(f"{prefix}.key"), k], 2)  # [B, kvh, past + T, D]
    v_all = ops.concat([state.read(f"{prefix}.value"), v], 2)  # [B, kvh, past + T, D]
    state.write(f"{prefix}.key", last(k_all, past, 2))
    state.write(f"{prefix}.value", last(v_all, past, 2))
    return attend(q, k_all, v_all, mask, dims, weights, prefix)


def transformer(
    x: Output, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], state: CarriedState
) -> ov.Node:
    """Qwen3TTSTokenizerV2DecoderTransformerModel: [B, latent, T] -> [B, latent, T]."""
    t = f"{_PREFIX}pre_transformer"
    dims = AttentionDims.from_spec(spec)
    past = spec.sliding_window - 1
    x = linear(ops.transpose(x, i64([0, 2, 1])), weights, f"{t}.input_proj", bias=True)  # [B, T, H]
    num_frames = ops.gather(ops.shape_of(x, "i64"), i64(1), i64(0))  # T, 0-d
    start = state.read(POSITION)  # [B]: frames each stream decoded before this chunk
    state.write(POSITION, ops.add(start, num_frames))
    positions = ops.add(
        ops.range(i64(0), num_frames, i64(1), "i64"), ops.unsqueeze(start, i64([1]))
    )  # [B, T]
    rope = rope_tables(positions, spec.head_dim, spec.rope_theta)  # cos, sin [B, 1, T, D]
    mask = _sliding_window_mask(start, num_frames, past, spec.sliding_window)
    for i in range(spec.num_hidden_layers):
        p = f"{t}.layers.{i}"
        h = rms_norm(x, weights[f"{p}.input_layernorm.weight"], spec.rms_norm_eps)
        h = _attention(h, weights, f"{p}.self_attn", dims, rope, mask, state, past)
        x = ops.add(x, ops.multiply(h, const(weights[f"{p}.self_attn_layer_scale.scale"])))
        h = rms_norm(x, weights[f"{p}.post_attention_layernorm.weight"], spec.rms_norm_eps)
        h = swiglu_mlp(h, weights, f"{p}.mlp")
        x = ops.add(x, ops.multiply(h, const(weights[f"{p}.mlp_layer_scale.scale"])))
    x = rms_norm(x, weights[f"{t}.norm.weight"], spec.rms_norm_eps)
    x = linear(x, weights, f"{t}.output_proj", bias=True)  # [B, T, latent]
    return ops.transpose(x, i64([0, 2, 1]))  # [B, latent, T]
