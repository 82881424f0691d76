"""The 12 Hz speech tokenizer's encoder (24 kHz audio -> codes) as an OpenVINO graph.

Mirrors `Qwen3TTSTokenizerV2Model.encode` (qwen_tts/core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py),
which is transformers' `MimiModel.encode` without streaming:

- SEANet encoder (`MimiEncoder`): conv k7, then per stride r in reversed(upsampling_ratios) a residual
  block (ELU, conv k3 to dim/compress, ELU, conv k1 back, + input) and ELU + conv k=2r stride r; then
  ELU + conv k3 to hidden_size. 24 kHz -> 25 Hz.
- Every `MimiConv1d` is causal: zero left padding of (k - 1) * dilation + 1 - stride, and right
  padding up to a whole number of strides, so a conv of stride r gives ceil(L / r) outputs.
- `MimiTransformerModel`: pre-LayerNorm layers (bias), RoPE self-attention with a plain causal mask
  (the encoder passes no sliding-window mask), GELU(erf) MLP, LayerScale on both branches.
- `downsample`: conv k4 stride 2 without bias, with *replicate* padding (25 Hz -> 12.5 Hz).
- `MimiSplitResidualVectorQuantizer.encode`: the semantic RVQ (1 codebook) and the acoustic RVQ (the
  next ones) each project the same embeddings with their own 1x1 `input_proj`, then pick the nearest
  codebook row (euclidean) and subtract it, codebook after codebook. Only the first
  `encoder_valid_num_quantizers` (16) codes are kept, which the later codebooks do not influence.

One audio of L samples gives ceil(L / 1920) frames, which is exactly the official trim to
ceil(valid samples / encode_downsample_rate) for a single unpadded input.
Weights are the release keys `encoder.*` of `speech_tokenizer/model.safetensors`, as float32.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.layers import Output, const, i64, linear, named_parameter, named_result
from qwen3tts.model.graphs.transformer import (
    AttentionDims,
    apply_rope,
    attend,
    float_attention_mask,
    project_heads,
    rope_tables,
)
from qwen3tts.model.spec import SpeechEncoderSpec

AUDIO = "audio"  # input [1, samples] f32, mono, at spec.sample_rate (24 kHz), nominally in [-1, 1]
CODES = "codes"  # output [1, frames, num_valid_quantizers] i64, frames = ceil(samples / 1920)

_PREFIX = "encoder."
_USAGE_EPS = 1e-5  # MimiEuclideanCodebook.epsilon


def _conv(
    x: Output,
    weights: Mapping[str, np.ndarray],
    module: str,
    stride: int = 1,
    dilation: int = 1,
    pad_mode: str = "constant",
) -> ov.Node:
    """MimiConv1d (causal) at `module`: x [1, C_in, L] -> [1, C_out, ceil(L / stride)]."""
    w = weights[f"{module}.conv.weight"]  # [out, in, k]
    left = (w.shape[-1] - 1) * dilation + 1 - stride
    length = ops.gather(ops.shape_of(x, "i64"), i64([2]), i64(0))  # [1]
    # right padding to a whole number of strides: (-L) mod stride
    right = ops.floor_mod(ops.negative(length), i64(stride))  # (-L) mod stride, >= 0
    pads_begin = ops.concat([i64([0, 0]), i64([left])], 0)
    pads_end = ops.concat([i64([0, 0]), right], 0)
    mode = "edge" if pad_mode == "replicate" else "constant"
    x = ops.pad(x, pads_begin, pads_end, mode)  # [1, C_in, left + L + right]
    y = ops.convolution(x, const(w, name=f"{module}.conv.weight"), [stride], [0], [0], [dilation])
    if f"{module}.conv.bias" in weights:
        bias = weights[f"{module}.conv.bias"].reshape(1, -1, 1)
        y = ops.add(y, const(bias, name=f"{module}.conv.bias"))
    return y


def _seanet(x: Output, spec: SpeechEncoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Node:
    """MimiEncoder: audio [1, 1, L] -> [1, hidden, ceil(L / prod(ratios))]; layer indices as upstream."""
    p = f"{_PREFIX}encoder.layers"
    x = _conv(x, weights, f"{p}.0")
    idx = 1
    for ratio in reversed(spec.upsampling_ratios):
        for j in range(spec.num_residual_layers):
            block = f"{p}.{idx}.block"
            h = _conv(ops.elu(x, 1.0), weights, f"{block}.1", dilation=spec.dilation_growth_rate**j)
            h = _conv(ops.elu(h, 1.0), weights, f"{block}.3")
            x = ops.add(x, h)
            idx += 1
        x = _conv(ops.elu(x, 1.0), weights, f"{p}.{idx + 1}", stride=ratio)  # layers.idx is the ELU
        idx += 2
    return _conv(ops.elu(x, 1.0), weights, f"{p}.{idx + 1}")


def _layer_norm(x: Output, weights: Mapping[str, np.ndarray], key: str, eps: float) -> ov.Node:
    """nn.LayerNorm over the last axis, with weight and bias."""
    h = ops.mvn(x, i64([-1]), True, eps, "inside_sqrt")
    return ops.add(ops.multiply(h, const(weights[f"{key}.weight"])), const(weights[f"{key}.bias"]))


def _transformer(x: Output, spec: SpeechEncoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Node:
    """MimiTransformerModel over x [1, T, hidden] at positions 0..T-1, causal."""
    dims = AttentionDims(spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim, spec.norm_eps)
    num_frames = ops.gather(ops.shape_of(x, "i64"), i64([1]), i64(0))  # [1]
    positions = ops.unsqueeze(ops.range(i64(0), ops.squeeze(num_frames, i64([0])), i64(1), "i64"), i64([0]))
    rope = rope_tables(positions, spec.head_dim, spec.rope_theta)  # cos, sin [1, 1, T, D]
    ones = ops.broadcast(i64([1]), ops.concat([i64([1]), num_frames], 0))  # [1, T]
    mask = float_attention_mask(ones, ops.squeeze(num_frames, i64([0])))  # [1, 1, T, T] causal
    for i in range(spec.num_hidden_layers):
        p = f"{_PREFIX}encoder_transformer.layers.{i}"
        h = _layer_norm(x, weights, f"{p}.input_layernorm", spec.norm_eps)
        q = project_heads(h, weights, f"{p}.self_attn.q_proj", dims.num_heads, dims.head_dim, None, 0.0)
        k = project_heads(h, weights, f"{p}.self_attn.k_proj", dims.num_kv_heads, dims.head_dim, None, 0.0)
        v = project_heads(h, weights, f"{p}.self_attn.v_proj", dims.num_kv_heads, dims.head_dim, None, 0.0)
        cos, sin = rope
        h = attend(apply_rope(q, cos, sin), apply_rope(k, cos, sin), v, mask, dims, weights, f"{p}.self_attn")
        x = ops.add(x, ops.multiply(h, const(weights[f"{p}.self_attn_layer_scale.scale"])))
        h = _layer_norm(x, weights, f"{p}.post_attention_layernorm", spec.norm_eps)
        h = linear(ops.gelu(linear(h, weights, f"{p}.mlp.fc1"), "erf"), weights, f"{p}.mlp.fc2")
        x = ops.add(x, ops.multiply(h, const(weights[f"{p}.mlp_layer_scale.scale"])))
    return x


def _nearest(residual: Output, table: np.ndarray) -> ov.Node:
    """Index [1, T] of the nearest row of `table` [V, D] (euclidean) for each row of residual [1, T, D].

    argmin |r - e|^2 = argmin (|e|^2 - 2 r.e): |r|^2 is the same for every row.
    """
    dots = ops.matmul(residual, const(table), False, True)  # [1, T, V]
    dist = ops.subtract(const(np.sum(table.astype(np.float64) ** 2, 1)), ops.multiply(dots, const(2.0)))
    top = ops.topk(dist, i64(1), -1, "min", "none", "i64")
    return ops.squeeze(top.output(1), i64([2]))  # [1, T]


def _quantize(x: Output, spec: SpeechEncoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Node:
    """MimiSplitResidualVectorQuantizer.encode, first num_valid_quantizers codes: x [1, hidden, T] ->
    codes [1, T, Q]."""
    codes = []
    groups = (
        ("semantic", spec.num_semantic_quantizers),
        ("acoustic", spec.num_valid_quantizers - spec.num_semantic_quantizers),
    )
    frames = ops.transpose(x, i64([0, 2, 1]))  # [1, T, hidden]
    for group, count in groups:
        q = f"{_PREFIX}quantizer.{group}_residual_vector_quantizer"
        proj = weights[f"{q}.input_proj.weight"][:, :, 0]  # [vq_dim, hidden]
        residual = ops.matmul(frames, const(proj, name=f"{q}.input_proj.weight"), False, True)  # [1, T, D]
        for i in range(count):
            book = f"{q}.layers.{i}.codebook"
            usage = np.maximum(weights[f"{book}.cluster_usage"], np.float32(_USAGE_EPS))
            table = (weights[f"{book}.embed_sum"] / usage[:, None]).astype(np.float32)  # [V, D]
            index = _nearest(residual, table)  # [1, T]
            codes.append(ops.unsqueeze(index, i64([2])))
            residual = ops.subtract(residual, ops.gather(const(table), index, i64(0)))  # [1, T, D]
    return ops.concat(codes, 2)  # [1, T, Q]


def build_speech_encoder(spec: SpeechEncoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Model:
    """AUDIO [1, samples] (dynamic) -> CODES [1, ceil(samples / 1920), num_valid_quantizers] i64."""
    audio = named_parameter([1, -1], ov.Type.f32, AUDIO)
    x = _seanet(ops.unsqueeze(audio, i64([1])), spec, weights)  # [1, hidden, T25]
    x = _transformer(ops.transpose(x, i64([0, 2, 1])), spec, weights)  # [1, T25, hidden]
    stride = round(spec.encodec_frame_rate / spec.frame_rate)
    x = _conv(ops.transpose(x, i64([0, 2, 1])), weights, f"{_PREFIX}downsample", stride, pad_mode="replicate")
    codes = named_result(_quantize(x, spec, weights), CODES)  # x: [1, hidden, T]
    return ov.Model([codes], [audio], "speech_encoder")
