"""The 12 Hz codec decoder (codes -> 24 kHz waveform) as an OpenVINO graph that streams exactly.

Mirrors `Qwen3TTSTokenizerV2Decoder.forward` in `qwen_tts/core/tokenizer_12hz/
modeling_qwen3_tts_tokenizer_v2.py`. That decoder is strictly causal: every conv is left-padded
with zeros, every transposed conv is trimmed on the right, attention is causal with a sliding window.
So a chunk of frames can be decoded from a small carried state and the concatenated chunks equal one
full decode of all frames (qwen3-tts-model.md §6.2), at any length, at a constant cost per frame:

- each causal conv (pre_conv, ConvNeXt depthwise convs, decoder convs, dilated residual convs)
  carries its last (kernel - 1) * dilation input samples; zeros at the start are exactly the
  official left padding;
- each transposed conv with kernel > stride carries its last input frame, whose kernel tail
  overlaps the next chunk's first output samples;
- each transformer layer carries the RoPE-rotated keys and the values of the last
  sliding_window - 1 frames, the most a query can see besides itself (transformers'
  sliding-window mask allows key k for query q iff q - sliding_window < k <= q);
- `position` counts the frames decoded so far: RoPE angles and the mask use absolute positions,
  exactly as one full decode would.

`build_codec_chunk` makes a static-shape graph for `chunk_frames` frames with every state as an
input `past.<name>` and an output `present.<name>`; all chunk sizes share one state layout
(`state_layout`), so a stream may mix them. `build_codec_full` is the same computation with the
initial state folded in as constants and a dynamic (or given) number of frames: one full decode.

Weights are the release keys of `speech_tokenizer/model.safetensors` (`decoder.*`), as float32.
Layouts: codes [1, T, Q]; conv activations [1, C, samples]; transformer activations [1, T, H].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.layers import (
    F32_MIN,
    AttentionDims,
    Output,
    apply_rope,
    const,
    i64,
    linear,
    named_parameter,
    named_result,
    project_heads,
    repeat_kv,
    rms_norm,
    rope_tables,
    swiglu_mlp,
)
from qwen3tts.model.spec import CodecDecoderSpec

CODES = "codes"  # input [1, T, num_quantizers] i64: audio codes 0..codebook_size-1
AUDIO = "audio"  # output [1, T * decode_upsample_rate] f32 in [-1, 1], 24 kHz
PAST_PREFIX = "past."  # chunk input `past.<state name>`
PRESENT_PREFIX = "present."  # chunk output `present.<state name>`
POSITION = "position"  # state [1] i64: frames decoded so far in this stream

_PREFIX = "decoder."
_LAYER_NORM_EPS = 1e-6  # ConvNeXt block nn.LayerNorm(dim, eps=1e-6)
_SNAKE_EPS = 1e-9  # SnakeBeta.no_div_by_zero
_USAGE_EPS = 1e-5  # EuclideanCodebook.epsilon
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class StateTensor:
    """One carried tensor: `name` (upstream module path), shape and dtype; zeros start a stream."""

    name: str
    shape: tuple[int, ...]
    dtype: type = np.float32


def _decoder_dims(spec: CodecDecoderSpec) -> list[tuple[int, int]]:
    """(in_dim, out_dim) of each DecoderBlock: channels halve per block."""
    return [(spec.decoder_dim >> b, spec.decoder_dim >> (b + 1)) for b in range(len(spec.upsample_rates))]


def state_layout(spec: CodecDecoderSpec) -> tuple[StateTensor, ...]:
    """Every state tensor of the chunk graph, in a fixed order; shapes do not depend on chunk size."""
    window = spec.sliding_window - 1
    states = [
        StateTensor(POSITION, (1,), np.int64),
        StateTensor("decoder.pre_conv", (1, spec.codebook_dim, 2)),
    ]
    for i in range(spec.num_hidden_layers):
        for kind in ("key", "value"):
            shape = (1, spec.num_key_value_heads, window, spec.head_dim)
            states.append(StateTensor(f"decoder.pre_transformer.layers.{i}.self_attn.{kind}", shape))
    for j in range(len(spec.upsampling_ratios)):
        states.append(StateTensor(f"decoder.upsample.{j}.1.dwconv", (1, spec.latent_dim, 6)))
    states.append(StateTensor("decoder.decoder.0", (1, spec.latent_dim, 6)))
    for b, (in_dim, out_dim) in enumerate(_decoder_dims(spec)):
        states.append(StateTensor(f"decoder.decoder.{b + 1}.block.1", (1, in_dim, 1)))
        for u, dilation in enumerate((1, 3, 9)):
            states.append(
                StateTensor(f"decoder.decoder.{b + 1}.block.{u + 2}.conv1", (1, out_dim, 6 * dilation))
            )
    last = len(spec.upsample_rates) + 2
    states.append(
        StateTensor(f"decoder.decoder.{last}", (1, spec.decoder_dim >> len(spec.upsample_rates), 6))
    )
    return tuple(states)


def initial_state(spec: CodecDecoderSpec) -> dict[str, np.ndarray]:
    """The state of a fresh stream: all zeros (= the official zero left padding, position 0)."""
    return {s.name: np.zeros(s.shape, s.dtype) for s in state_layout(spec)}


class _State:
    """Hands out the carried tensors while the graph is built and collects their successors.

    Streaming: `past.<name>` Parameters and `present.<name>` Results. Full decode: zero Constants,
    and the successors are dropped.
    """

    def __init__(self, spec: CodecDecoderSpec, streaming: bool):
        self.layout = {s.name: s for s in state_layout(spec)}
        self.streaming = streaming
        self.inputs: dict[str, ov.Node] = {}
        self.results: list[ov.Node] = []

    @property
    def parameters(self) -> list[ov.Node]:
        return list(self.inputs.values()) if self.streaming else []

    def read(self, name: str) -> Output:
        if name not in self.inputs:
            s = self.layout[name]
            if self.streaming:
                kind = ov.Type.i64 if s.dtype == np.int64 else ov.Type.f32
                self.inputs[name] = named_parameter(list(s.shape), kind, PAST_PREFIX + name)
            else:
                self.inputs[name] = ops.constant(np.zeros(s.shape, s.dtype))
        return self.inputs[name]

    def write(self, name: str, value: Output) -> None:
        if self.streaming:
            self.results.append(named_result(value, PRESENT_PREFIX + name))


# ---------------------------------------------------------------- convolutions


def _last(x: Output, count: int, axis: int) -> ov.Node:
    """The last `count` entries of `x` along `axis`."""
    return ops.slice(x, i64([-count]), i64([_INT64_MAX]), i64([1]), i64([axis]))


def _channel_bias(weights: Mapping[str, np.ndarray], key: str) -> ov.Node:
    return const(weights[key].reshape(1, -1, 1), name=key)  # [1, C, 1]


def _causal_conv(
    x: Output,
    weights: Mapping[str, np.ndarray],
    module: str,
    state: _State,
    dilation: int = 1,
    groups: int = 1,
) -> ov.Node:
    """Qwen3TTSTokenizerV2CausalConvNet (stride 1) at `module`: the left padding is the carried tail."""
    w = weights[f"{module}.conv.weight"]  # [out, in / groups, k]
    tail = (w.shape[-1] - 1) * dilation
    if tail:
        x = ops.concat([state.read(module), x], 2)  # [1, C_in, tail + S]
        state.write(module, _last(x, tail, 2))
    if groups == 1:
        y = ops.convolution(x, const(w, name=f"{module}.conv.weight"), [1], [0], [0], [dilation])
    else:  # depthwise: [groups, out / groups, in / groups, k]
        gw = w.reshape(groups, w.shape[0] // groups, w.shape[1], w.shape[2])
        y = ops.group_convolution(x, const(gw, name=f"{module}.conv.weight"), [1], [0], [0], [dilation])
    return ops.add(y, _channel_bias(weights, f"{module}.conv.bias"))  # [1, C_out, S]


def _causal_trans_conv(
    x: Output, weights: Mapping[str, np.ndarray], module: str, stride: int, state: _State
) -> ov.Node:
    """Qwen3TTSTokenizerV2CausalTransConvNet (kernel k, stride s, right trim k - s) at `module`.

    Input frame t writes output samples [t*s, t*s + k); the trim keeps samples of frames <= t, so
    the first output frame of a chunk also needs the kernel tails of the last ceil(k/s) - 1 input
    frames of the previous chunk: they are carried, prepended, and their own frames cropped off.
    """
    w = weights[f"{module}.conv.weight"]  # [in, out, k]
    k = w.shape[-1]
    carry = math.ceil(k / stride) - 1
    if carry:
        x = ops.concat([state.read(module), x], 2)  # [1, C_in, carry + S]
        state.write(module, _last(x, carry, 2))
    # full output (carry + S - 1) * s + k, crop carry * s at the start and k - s at the end: S * s
    y = ops.convolution_backprop_data(
        x,
        const(w, name=f"{module}.conv.weight"),
        [stride],
        pads_begin=[carry * stride],
        pads_end=[k - stride],
    )
    return ops.add(y, _channel_bias(weights, f"{module}.conv.bias"))  # [1, C_out, S * s]


# ---------------------------------------------------------------- blocks


def _snake(x: Output, weights: Mapping[str, np.ndarray], module: str) -> ov.Node:
    """SnakeBeta: x + 1 / (exp(beta) + 1e-9) * sin(x * exp(alpha))^2, per channel of [1, C, S]."""
    alpha = np.exp(weights[f"{module}.alpha"]).reshape(1, -1, 1)  # [1, C, 1]
    inv_beta = (1.0 / (np.exp(weights[f"{module}.beta"]) + np.float32(_SNAKE_EPS))).reshape(1, -1, 1)
    wave = ops.sin(ops.multiply(x, const(alpha, name=f"{module}.alpha")))
    return ops.add(x, ops.multiply(const(inv_beta, name=f"{module}.beta"), ops.multiply(wave, wave)))


def _convnext(x: Output, weights: Mapping[str, np.ndarray], module: str, state: _State) -> ov.Node:
    """Qwen3TTSTokenizerV2ConvNeXtBlock: causal depthwise k7 -> LayerNorm -> 4x GELU MLP -> gamma, + x."""
    channels = weights[f"{module}.dwconv.conv.weight"].shape[0]
    h = _causal_conv(x, weights, f"{module}.dwconv", state, groups=channels)  # [1, C, S]
    h = ops.transpose(h, i64([0, 2, 1]))  # [1, S, C]
    h = ops.mvn(h, i64([2]), True, _LAYER_NORM_EPS, "inside_sqrt")
    h = ops.add(
        ops.multiply(h, const(weights[f"{module}.norm.weight"])), const(weights[f"{module}.norm.bias"])
    )
    h = ops.gelu(linear(h, weights, f"{module}.pwconv1", bias=True), "erf")  # [1, S, 4C]
    h = linear(h, weights, f"{module}.pwconv2", bias=True)  # [1, S, C]
    h = ops.multiply(h, const(weights[f"{module}.gamma"], name=f"{module}.gamma"))
    return ops.add(x, ops.transpose(h, i64([0, 2, 1])))  # [1, C, S]


def _decoder_block(
    x: Output, weights: Mapping[str, np.ndarray], module: str, rate: int, state: _State
) -> ov.Node:
    """Qwen3TTSTokenizerV2DecoderDecoderBlock: SnakeBeta, transposed conv (x rate), 3 residual units."""
    x = _snake(x, weights, f"{module}.block.0")
    x = _causal_trans_conv(x, weights, f"{module}.block.1", rate, state)  # [1, C/2, S * rate]
    for u, dilation in enumerate((1, 3, 9)):
        unit = f"{module}.block.{u + 2}"  # Qwen3TTSTokenizerV2DecoderDecoderResidualUnit
        h = _snake(x, weights, f"{unit}.act1")
        h = _causal_conv(h, weights, f"{unit}.conv1", state, dilation=dilation)
        h = _snake(h, weights, f"{unit}.act2")
        x = ops.add(x, _causal_conv(h, weights, f"{unit}.conv2", state))
    return x


def _quantizer_decode(codes: Output, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Node:
    """SplitResidualVectorQuantizer.decode: codes [1, T, Q] -> [1, codebook_dim, T].

    All Q codebook tables (embedding_sum / clamp(cluster_usage)) are stacked into one
    [Q * codebook_size, codebook_dim / 2] table; code q of a frame indexes row q * codebook_size + code.
    """
    tables = []
    for q in range(spec.num_quantizers):
        group, i = (
            ("rvq_first", q)
            if q < spec.num_semantic_quantizers
            else ("rvq_rest", q - spec.num_semantic_quantizers)
        )
        book = f"{_PREFIX}quantizer.{group}.vq.layers.{i}._codebook"
        usage = np.maximum(weights[f"{book}.cluster_usage"], np.float32(_USAGE_EPS))
        tables.append(weights[f"{book}.embedding_sum"] / usage[:, None])
    table = const(np.concatenate(tables, 0), name=f"{_PREFIX}quantizer.codebooks")  # [Q * V, D/2]
    offsets = i64(np.arange(spec.num_quantizers) * spec.codebook_size)  # [Q]
    vectors = ops.gather(table, ops.add(codes, offsets), i64(0))  # [1, T, Q, D/2]
    first = _sum_codebooks(vectors, 0, spec.num_semantic_quantizers)  # [1, T, D/2]
    rest = _sum_codebooks(vectors, spec.num_semantic_quantizers, spec.num_quantizers)  # [1, T, D/2]
    hidden = ops.add(
        _project(first, weights, f"{_PREFIX}quantizer.rvq_first.output_proj.weight"),
        _project(rest, weights, f"{_PREFIX}quantizer.rvq_rest.output_proj.weight"),
    )  # [1, T, D]
    return ops.transpose(hidden, i64([0, 2, 1]))  # [1, D, T]


def _sum_codebooks(vectors: Output, begin: int, end: int) -> ov.Node:
    picked = ops.slice(vectors, i64([begin]), i64([end]), i64([1]), i64([2]))  # [1, T, end - begin, D/2]
    return ops.reduce_sum(picked, i64([2]), keep_dims=False)  # [1, T, D/2]


def _project(x: Output, weights: Mapping[str, np.ndarray], key: str) -> ov.Node:
    """A bias-free 1x1 Conv1d ([out, in, 1]) applied as a matmul on [1, T, in]."""
    return ops.matmul(x, const(weights[key][:, :, 0], name=key), False, True)  # [1, T, out]


# ---------------------------------------------------------------- transformer


def _sliding_window_mask(start: Output, num_frames: Output, past: int, window: int) -> ov.Node:
    """Additive mask [1, 1, T, past + T]: query at start + i sees key at start - past + j iff that key
    exists (>= 0), is not in the future and lies within the window (transformers' sliding mask)."""
    query_pos = ops.add(ops.range(i64(0), num_frames, i64(1), "i64"), start)  # [T]
    key_pos = ops.add(
        ops.range(i64(0), ops.add(num_frames, i64(past)), i64(1), "i64"), ops.subtract(start, i64(past))
    )  # [past + T]
    q = ops.unsqueeze(query_pos, i64([1]))  # [T, 1]
    k = ops.unsqueeze(key_pos, i64([0]))  # [1, past + T]
    allowed = ops.logical_and(
        ops.logical_and(ops.greater_equal(k, i64(0)), ops.less_equal(k, q)),
        ops.greater(k, ops.subtract(q, i64(window))),
    )  # [T, past + T]
    mask = ops.select(allowed, const(0.0), const(F32_MIN))
    return ops.unsqueeze(mask, i64([0, 1]))  # [1, 1, T, past + T]


def _attention(
    x: Output,
    weights: Mapping[str, np.ndarray],
    prefix: str,
    dims: AttentionDims,
    rope: tuple[Output, Output],
    mask: Output,
    state: _State,
    past: int,
) -> ov.Node:
    """Qwen3TTSTokenizerV2DecoderAttention (no q/k norm, no bias) over [cached window | this chunk]."""
    q = project_heads(x, weights, f"{prefix}.q_proj", dims.num_heads, dims.head_dim, None, 0.0)  # [1,h,T,D]
    k = project_heads(x, weights, f"{prefix}.k_proj", dims.num_kv_heads, dims.head_dim, None, 0.0)
    v = project_heads(x, weights, f"{prefix}.v_proj", dims.num_kv_heads, dims.head_dim, None, 0.0)
    cos, sin = rope
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k_all = ops.concat([state.read(f"{prefix}.key"), k], 2)  # [1, kvh, past + T, D]
    v_all = ops.concat([state.read(f"{prefix}.value"), v], 2)  # [1, kvh, past + T, D]
    state.write(f"{prefix}.key", _last(k_all, past, 2))
    state.write(f"{prefix}.value", _last(v_all, past, 2))
    attn = ops.scaled_dot_product_attention(
        q, repeat_kv(k_all, dims), repeat_kv(v_all, dims), mask, causal=False
    )  # [1, h, T, D]
    attn = ops.transpose(attn, i64([0, 2, 1, 3]))  # [1, T, h, D]
    attn = ops.reshape(attn, i64([0, 0, dims.num_heads * dims.head_dim]), special_zero=True)  # [1, T, h*D]
    return linear(attn, weights, f"{prefix}.o_proj")


def _transformer(
    x: Output, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], state: _State
) -> ov.Node:
    """Qwen3TTSTokenizerV2DecoderTransformerModel: [1, latent, T] -> [1, latent, T]."""
    t = f"{_PREFIX}pre_transformer"
    dims = AttentionDims.from_spec(spec)
    past = spec.sliding_window - 1
    x = linear(ops.transpose(x, i64([0, 2, 1])), weights, f"{t}.input_proj", bias=True)  # [1, T, H]
    num_frames = ops.gather(ops.shape_of(x, "i64"), i64(1), i64(0))  # T, 0-d
    start = ops.squeeze(state.read(POSITION), i64([0]))  # 0-d
    state.write(POSITION, ops.add(state.read(POSITION), ops.unsqueeze(num_frames, i64([0]))))
    positions = ops.unsqueeze(
        ops.add(ops.range(i64(0), num_frames, i64(1), "i64"), start), i64([0])
    )  # [1, T]
    rope = rope_tables(positions, spec.head_dim, spec.rope_theta)  # cos, sin [1, 1, T, D]
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
    x = linear(x, weights, f"{t}.output_proj", bias=True)  # [1, T, latent]
    return ops.transpose(x, i64([0, 2, 1]))  # [1, latent, T]


# ---------------------------------------------------------------- builders


def _decode(
    codes: Output, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], state: _State
) -> ov.Node:
    """Qwen3TTSTokenizerV2Decoder.forward: codes [1, T, Q] -> audio [1, T * decode_upsample_rate]."""
    x = _quantizer_decode(codes, spec, weights)  # [1, codebook_dim, T]
    x = _causal_conv(x, weights, f"{_PREFIX}pre_conv", state)  # [1, latent, T]
    x = _transformer(x, spec, weights, state)  # [1, latent, T]
    for j, factor in enumerate(spec.upsampling_ratios):
        x = _causal_trans_conv(x, weights, f"{_PREFIX}upsample.{j}.0", factor, state)  # [1, latent, S*f]
        x = _convnext(x, weights, f"{_PREFIX}upsample.{j}.1", state)
    x = _causal_conv(x, weights, f"{_PREFIX}decoder.0", state)  # [1, decoder_dim, S]
    for b, rate in enumerate(spec.upsample_rates):
        x = _decoder_block(x, weights, f"{_PREFIX}decoder.{b + 1}", rate, state)  # [1, C/2, S*rate]
    last = len(spec.upsample_rates) + 1
    x = _snake(x, weights, f"{_PREFIX}decoder.{last}")
    x = _causal_conv(x, weights, f"{_PREFIX}decoder.{last + 1}", state)  # [1, 1, samples]
    x = ops.clamp(x, -1.0, 1.0)
    return ops.reshape(x, i64([1, -1]), special_zero=False)  # [1, samples]


def build_codec_chunk(
    spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], chunk_frames: int
) -> ov.Model:
    """Static graph decoding `chunk_frames` frames of one stream from `past.*` to `present.*` state.

    Inputs: CODES [1, chunk_frames, Q] i64 and `past.<name>` for each `state_layout(spec)` entry.
    Outputs: AUDIO [1, chunk_frames * decode_upsample_rate] f32 and `present.<name>` (same shapes).
    """
    if chunk_frames < 1:
        raise ValueError(f"chunk_frames must be >= 1, got {chunk_frames}")
    state = _State(spec, streaming=True)
    codes = named_parameter([1, chunk_frames, spec.num_quantizers], ov.Type.i64, CODES)
    audio = named_result(_decode(codes, spec, weights, state), AUDIO)
    return ov.Model([audio, *state.results], [codes, *state.parameters], f"codec_chunk_{chunk_frames}")


def build_codec_full(
    spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], num_frames: int | None = None
) -> ov.Model:
    """One full causal decode from a fresh stream: CODES [1, T, Q] -> AUDIO [1, T * 1920].

    T is dynamic unless `num_frames` is given. Equals the official `decoder(codes)` (not its
    300-frame `chunked_decode`, which loses exactness past 300 frames).
    """
    state = _State(spec, streaming=False)
    codes = named_parameter([1, num_frames or -1, spec.num_quantizers], ov.Type.i64, CODES)
    audio = named_result(_decode(codes, spec, weights, state), AUDIO)
    return ov.Model([audio], [codes], "codec_full")
