"""The codec decoder's convolutions, SnakeBeta and the blocks made of them, in forms the CPU runs fast.

Mirrors `Qwen3TTSTokenizerV2CausalConvNet`, `Qwen3TTSTokenizerV2CausalTransConvNet` and `SnakeBeta` in
`qwen_tts/core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py`, computing the same values in f32:

- SnakeBeta's sin(x * alpha)^2 is a range reduction plus a polynomial made of Multiply/Add/Round/Floor.
  The CPU plugin runs `Sin` (and `Cos`) on a non-JIT reference kernel (a third of the whole decode),
  while a chain of these elementwise ops fuses into one JIT kernel. The result is within ~1e-7 of the
  true value, as close as f32 `sin` itself (`sin_squared`).
- A causal transposed conv with kernel k and stride s is a polyphase ordinary conv: output sample
  t*s + j only sees input frames t, t-1, ..., so it is a causal Conv1d of ceil(k/s) taps producing
  s * C_out channels, then DepthToSpace. The plugin's `ConvolutionBackpropData` takes a slow gemm
  path; the ordinary conv takes its brgemm path, and DepthToSpace runs in the conv's channels-last
  layout (a Reshape/Transpose pair cost two layout Reorders). Same products, in a different order.

`UPSTREAM` keeps both in the upstream ops' shape (Sin, ConvolutionBackpropData): the full decode uses
it, so the tests that compare streamed chunks with a full decode also compare the two formulations,
and the full decode (which the tiny checkpoints' level calibration runs) keeps its numerics.

Every causal layer carries its left context in a `CarriedState` (codec.py): zeros at the start of a
stream are exactly the official left padding. Activations are [B, C, samples] f32; nothing here depends
on B, so one graph may decode a batch of streams.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.layers import Output, const, i64, linear

_SNAKE_EPS = 1e-9  # SnakeBeta.no_div_by_zero
_LAYER_NORM_EPS = 1e-6  # ConvNeXt block nn.LayerNorm(dim, eps=1e-6)
_INT64_MAX = np.iinfo(np.int64).max


class CarriedState(Protocol):
    """Where a causal layer reads its left context and writes the context of the next chunk."""

    def read(self, name: str) -> Output: ...

    def write(self, name: str, value: Output) -> None: ...


def last(x: Output, count: int, axis: int) -> ov.Node:
    """The last `count` entries of `x` along `axis`."""
    return ops.slice(x, i64([-count]), i64([_INT64_MAX]), i64([1]), i64([axis]))


def channel_bias(weights: Mapping[str, np.ndarray], key: str) -> ov.Node:
    return const(weights[key].reshape(1, -1, 1), name=key)  # [1, C, 1]


# ---------------------------------------------------------------- convolutions


def causal_conv(
    x: Output,
    weights: Mapping[str, np.ndarray],
    module: str,
    state: CarriedState,
    dilation: int = 1,
    groups: int = 1,
) -> ov.Node:
    """Qwen3TTSTokenizerV2CausalConvNet (stride 1) at `module`: the left padding is the carried tail."""
    w = weights[f"{module}.conv.weight"]  # [out, in / groups, k]
    tail = (w.shape[-1] - 1) * dilation
    if tail:
        x = ops.concat([state.read(module), x], 2)  # [B, C_in, tail + S]
        state.write(module, last(x, tail, 2))
    if groups == 1:
        y = ops.convolution(x, const(w, name=f"{module}.conv.weight"), [1], [0], [0], [dilation])
    else:  # depthwise: [groups, out / groups, in / groups, k]
        gw = w.reshape(groups, w.shape[0] // groups, w.shape[1], w.shape[2])
        y = ops.group_convolution(x, const(gw, name=f"{module}.conv.weight"), [1], [0], [0], [dilation])
    return ops.add(y, channel_bias(weights, f"{module}.conv.bias"))  # [B, C_out, S]


def polyphase_weight(w: np.ndarray, stride: int) -> np.ndarray:
    """Transposed-conv weight [in, out, k] -> ordinary conv weight [out * stride, in, taps].

    taps = ceil(k / stride). Output channel o * stride + j of the conv at frame t is output sample
    t * stride + j of channel o of the transposed conv: tap taps-1-m reads input frame t - m through
    kernel index j + m * stride (zero where that index is >= k).
    """
    c_in, c_out, k = w.shape
    taps = math.ceil(k / stride)
    padded = np.zeros((c_in, c_out, taps * stride), w.dtype)
    padded[:, :, :k] = w
    phases = padded.reshape(c_in, c_out, taps, stride)  # [in, out, m, j]: kernel index j + m * stride
    conv = phases[:, :, ::-1, :].transpose(1, 3, 0, 2)  # [out, j, in, tap]: tap = taps - 1 - m
    return np.ascontiguousarray(conv.reshape(c_out * stride, c_in, taps))


def causal_trans_conv(
    x: Output, weights: Mapping[str, np.ndarray], module: str, stride: int, state: CarriedState
) -> ov.Node:
    """Qwen3TTSTokenizerV2CausalTransConvNet (kernel k, stride s, right trim k - s) at `module`.

    Input frame t writes output samples [t*s, t*s + k); the trim keeps samples of frames <= t, so
    the first output frame of a chunk also needs the last ceil(k/s) - 1 input frames of the previous
    chunk: they are carried and prepended, as the left context of the polyphase conv.
    """
    w = weights[f"{module}.conv.weight"]  # [in, out, k]
    carry = math.ceil(w.shape[-1] / stride) - 1
    if carry:
        x = ops.concat([state.read(module), x], 2)  # [B, C_in, carry + S]
        state.write(module, last(x, carry, 2))
    phases = const(polyphase_weight(w, stride), name=f"{module}.conv.weight")
    y = ops.convolution(x, phases, [1], [0], [0], [1])  # [B, C_out * s, S]: channel o * s + j
    y = ops.depth_to_space(y, "depth_first", stride)  # [B, C_out, S * s]: sample t * s + j
    return ops.add(y, channel_bias(weights, f"{module}.conv.bias"))


def causal_trans_conv_upstream(
    x: Output, weights: Mapping[str, np.ndarray], module: str, stride: int, state: CarriedState
) -> ov.Node:
    """The same layer as one ConvolutionBackpropData, cropped: the upstream op, slow on CPU."""
    w = weights[f"{module}.conv.weight"]  # [in, out, k]
    k = w.shape[-1]
    carry = math.ceil(k / stride) - 1
    if carry:
        x = ops.concat([state.read(module), x], 2)  # [B, C_in, carry + S]
        state.write(module, last(x, carry, 2))
    # full output (carry + S - 1) * s + k, crop carry * s at the start and k - s at the end: S * s
    y = ops.convolution_backprop_data(
        x,
        const(w, name=f"{module}.conv.weight"),
        [stride],
        pads_begin=[carry * stride],
        pads_end=[k - stride],
    )
    return ops.add(y, channel_bias(weights, f"{module}.conv.bias"))  # [B, C_out, S * s]


# ---------------------------------------------------------------- blocks


def convnext_block(x: Output, weights: Mapping[str, np.ndarray], module: str, state: CarriedState) -> ov.Node:
    """Qwen3TTSTokenizerV2ConvNeXtBlock: causal depthwise k7 -> LayerNorm -> 4x GELU MLP -> gamma, + x."""
    channels = weights[f"{module}.dwconv.conv.weight"].shape[0]
    h = causal_conv(x, weights, f"{module}.dwconv", state, groups=channels)  # [B, C, S]
    h = ops.transpose(h, i64([0, 2, 1]))  # [B, S, C]
    h = ops.mvn(h, i64([2]), True, _LAYER_NORM_EPS, "inside_sqrt")
    h = ops.add(
        ops.multiply(h, const(weights[f"{module}.norm.weight"])), const(weights[f"{module}.norm.bias"])
    )
    h = ops.gelu(linear(h, weights, f"{module}.pwconv1", bias=True), "erf")  # [B, S, 4C]
    h = linear(h, weights, f"{module}.pwconv2", bias=True)  # [B, S, C]
    h = ops.multiply(h, const(weights[f"{module}.gamma"], name=f"{module}.gamma"))
    return ops.add(x, ops.transpose(h, i64([0, 2, 1])))  # [B, C, S]


def decoder_block(
    x: Output,
    weights: Mapping[str, np.ndarray],
    module: str,
    rate: int,
    state: CarriedState,
    forms: LayerForms,
) -> ov.Node:
    """Qwen3TTSTokenizerV2DecoderDecoderBlock: SnakeBeta, transposed conv (x rate), 3 residual units."""
    x = forms.snake(x, weights, f"{module}.block.0")
    x = forms.trans_conv(x, weights, f"{module}.block.1", rate, state)  # [B, C/2, S * rate]
    for u, dilation in enumerate((1, 3, 9)):
        unit = f"{module}.block.{u + 2}"  # Qwen3TTSTokenizerV2DecoderDecoderResidualUnit
        h = forms.snake(x, weights, f"{unit}.act1")
        h = causal_conv(h, weights, f"{unit}.conv1", state, dilation=dilation)
        h = forms.snake(h, weights, f"{unit}.act2")
        x = ops.add(x, causal_conv(h, weights, f"{unit}.conv2", state))
    return x


# ---------------------------------------------------------------- SnakeBeta


def _cody_waite_parts(value: float, bits: int = 10) -> tuple[np.float32, np.float32, np.float32]:
    """value = hi + mid + lo, hi and mid with `bits` significant bits: n * hi and n * mid are exact
    in f32 for |n| < 2^(24 - bits), so y - n * value keeps the precision of y (Cody-Waite)."""

    def head(v: float) -> float:
        mantissa, exponent = np.frexp(v)
        return float(np.ldexp(np.floor(mantissa * 2**bits), exponent - bits))

    hi = head(value)
    mid = head(value - hi)
    return np.float32(hi), np.float32(mid), np.float32(value - hi - mid)


def _sin_squared_coefficients(degree: int = 5) -> np.ndarray:
    """c with sin(r)^2 ~= u + u^2 * (c0 + c1 u + ...), u = r^2, |r| <= pi/4 (fit error ~1e-12).

    Least squares on Chebyshev nodes in f64: a near-minimax fit; f32 rounding dominates the error.
    """
    r = np.cos(np.linspace(0.0, np.pi, 4001)) * (np.pi / 4)
    u = r * r
    basis = np.stack([u ** (2 + i) for i in range(degree)], 1)
    return np.linalg.lstsq(basis, np.sin(r) ** 2 - u, rcond=None)[0].astype(np.float32)


_HALF_PI_PARTS = _cody_waite_parts(np.pi / 2)
_SIN2_COEFFICIENTS = _sin_squared_coefficients()


def _f32(value) -> ov.Node:
    return ops.constant(np.float32(value))


def sin_squared(y: Output) -> ov.Node:
    """sin(y)^2 from JIT-able elementwise ops, within ~1e-7 of the exact value for |y| < 2^14.

    y = n * pi/2 + r with |r| <= pi/4; sin(y)^2 = sin(r)^2 for even n, 1 - sin(r)^2 for odd n.
    """
    n = ops.round(ops.multiply(y, _f32(2 / np.pi)), "half_to_even")
    r = y
    for part in _HALF_PI_PARTS:
        r = ops.subtract(r, ops.multiply(n, _f32(part)))
    u = ops.multiply(r, r)
    poly = _f32(_SIN2_COEFFICIENTS[-1])
    for c in _SIN2_COEFFICIENTS[-2::-1]:
        poly = ops.add(ops.multiply(poly, u), _f32(c))
    even = ops.add(u, ops.multiply(ops.multiply(u, u), poly))  # sin(r)^2 in [0, 1/2]
    odd = ops.subtract(n, ops.multiply(_f32(2), ops.floor(ops.multiply(n, _f32(0.5)))))  # n mod 2
    return ops.add(even, ops.multiply(odd, ops.subtract(_f32(1), ops.multiply(_f32(2), even))))


def sin_squared_upstream(y: Output) -> ov.Node:
    """sin(y)^2 with the Sin op, as upstream computes it."""
    wave = ops.sin(y)
    return ops.multiply(wave, wave)


def snake(
    x: Output,
    weights: Mapping[str, np.ndarray],
    module: str,
    sin2: Callable[[Output], ov.Node] = sin_squared,
) -> ov.Node:
    """SnakeBeta: x + 1 / (exp(beta) + 1e-9) * sin(x * exp(alpha))^2, per channel of [B, C, S]."""
    alpha = np.exp(weights[f"{module}.alpha"]).reshape(1, -1, 1)  # [1, C, 1]
    inv_beta = (1.0 / (np.exp(weights[f"{module}.beta"]) + np.float32(_SNAKE_EPS))).reshape(1, -1, 1)
    wave = sin2(ops.multiply(x, const(alpha, name=f"{module}.alpha")))
    return ops.add(x, ops.multiply(const(inv_beta, name=f"{module}.beta"), wave))


@dataclass(frozen=True)
class LayerForms:
    """Which formulation of SnakeBeta and of the causal transposed conv a graph is built from."""

    snake: Callable[..., ov.Node]
    trans_conv: Callable[..., ov.Node]


# FAST: the chunk graphs, what the product runs; UPSTREAM: the full decode, in upstream's ops
FAST = LayerForms(snake, causal_trans_conv)
UPSTREAM = LayerForms(partial(snake, sin2=sin_squared_upstream), causal_trans_conv_upstream)
