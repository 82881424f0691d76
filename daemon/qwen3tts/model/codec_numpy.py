"""The 12 Hz codec decoder in numpy float64: what the tiny checkpoint writer measures its level with.

Mirrors `Qwen3TTSTokenizerV2Decoder.forward` (qwen_tts/core/tokenizer_12hz/
modeling_qwen3_tts_tokenizer_v2.py) for one stream, in the upstream order of operations, without the
final clamp. It exists so that `qwen3tts tiny` writes the same bytes on every machine: the writer
must not depend on OpenVINO's CPU kernels, whose last bits differ between instruction sets. (numpy's
own BLAS and transcendental functions may differ in the last bits too, in float64; the writer rounds
what it derives from this decode to a few significant bits.) Not for serving: graphs/codec.py is the
product's decoder, and the parity tests compare it with the official implementation.

Layouts: codes [T, Q]; conv activations [C, samples]; transformer activations [T, H].
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from qwen3tts.model.spec import CodecDecoderSpec

_PREFIX = "decoder."
_USAGE_EPS = 1e-5  # EuclideanCodebook.epsilon
_LAYER_NORM_EPS = 1e-6  # ConvNeXt block nn.LayerNorm
_SNAKE_EPS = 1e-9  # SnakeBeta.no_div_by_zero
_erf = np.vectorize(math.erf, otypes=[np.float64])


class _Weights:
    """Release weights (`decoder.*`) read as float64."""

    def __init__(self, weights: Mapping[str, np.ndarray]):
        self._weights = weights

    def __call__(self, key: str) -> np.ndarray:
        return np.asarray(self._weights[_PREFIX + key], np.float64)


def causal_conv(x: np.ndarray, w: _Weights, module: str, dilation: int = 1, groups: int = 1) -> np.ndarray:
    """Qwen3TTSTokenizerV2CausalConvNet (stride 1): zero left padding of (k - 1) * dilation."""
    kernel, bias = w(f"{module}.conv.weight"), w(f"{module}.conv.bias")  # [out, in / groups, k], [out]
    k = kernel.shape[-1]
    samples = x.shape[1]
    padded = np.pad(x, ((0, 0), ((k - 1) * dilation, 0)))  # [C_in, pad + S]
    y = np.zeros((kernel.shape[0], samples))
    for j in range(k):
        window = padded[:, j * dilation : j * dilation + samples]  # [C_in, S]
        y += kernel[:, :, j] @ window if groups == 1 else kernel[:, 0, j, None] * window
    return y + bias[:, None]


def causal_trans_conv(x: np.ndarray, w: _Weights, module: str, stride: int) -> np.ndarray:
    """Qwen3TTSTokenizerV2CausalTransConvNet: ConvTranspose1d, then the last k - stride samples cut."""
    kernel, bias = w(f"{module}.conv.weight"), w(f"{module}.conv.bias")  # [in, out, k], [out]
    k, frames = kernel.shape[-1], x.shape[1]
    full = np.zeros((kernel.shape[1], (frames - 1) * stride + k))  # [C_out, (S - 1) * s + k]
    for j in range(k):
        full[:, j : j + (frames - 1) * stride + 1 : stride] += kernel[:, :, j].T @ x
    return full[:, : frames * stride] + bias[:, None]  # [C_out, S * s]


def snake(x: np.ndarray, w: _Weights, module: str) -> np.ndarray:
    """SnakeBeta: x + 1 / (exp(beta) + 1e-9) * sin(x * exp(alpha))^2 per channel."""
    alpha = np.exp(w(f"{module}.alpha"))[:, None]
    beta = np.exp(w(f"{module}.beta"))[:, None]
    return x + 1.0 / (beta + _SNAKE_EPS) * np.sin(x * alpha) ** 2


def _quantizer_decode(codes: np.ndarray, spec: CodecDecoderSpec, w: _Weights) -> np.ndarray:
    """SplitResidualVectorQuantizer.decode: codes [T, Q] -> [codebook_dim, T]."""
    hidden = 0.0
    for group, first, end in (
        ("rvq_first", 0, spec.num_semantic_quantizers),
        ("rvq_rest", spec.num_semantic_quantizers, spec.num_quantizers),
    ):
        total = 0.0
        for q in range(first, end):
            book = f"quantizer.{group}.vq.layers.{q - first}._codebook"
            table = w(f"{book}.embedding_sum") / np.maximum(w(f"{book}.cluster_usage"), _USAGE_EPS)[:, None]
            total = total + table[codes[:, q]]  # [T, D/2]
        hidden = hidden + total @ w(f"quantizer.{group}.output_proj.weight")[:, :, 0].T  # [T, D]
    return np.asarray(hidden).T  # [D, T]


def _rms_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps) * gain


def _rope(x: np.ndarray, theta: float) -> np.ndarray:
    """RoPE on x [heads, T, D] at positions 0..T-1 (rotate_half convention)."""
    dim, frames = x.shape[-1], x.shape[1]
    inv_freq = 1.0 / theta ** (np.arange(0, dim, 2) / dim)  # [D/2]
    angles = np.arange(frames)[:, None] * inv_freq[None, :]  # [T, D/2]
    angles = np.concatenate([angles, angles], -1)  # [T, D]
    rotated = np.concatenate([-x[..., dim // 2 :], x[..., : dim // 2]], -1)
    return x * np.cos(angles) + rotated * np.sin(angles)


def _attention(x: np.ndarray, spec: CodecDecoderSpec, w: _Weights, prefix: str) -> np.ndarray:
    """Causal sliding-window attention over x [T, H], then o_proj."""
    frames, heads, kv_heads, dim = (
        x.shape[0],
        spec.num_attention_heads,
        spec.num_key_value_heads,
        spec.head_dim,
    )

    def project(name: str, n: int) -> np.ndarray:
        return (x @ w(f"{prefix}.{name}.weight").T).reshape(frames, n, dim).transpose(1, 0, 2)  # [n, T, D]

    q = _rope(project("q_proj", heads), spec.rope_theta)
    k = np.repeat(_rope(project("k_proj", kv_heads), spec.rope_theta), heads // kv_heads, 0)
    v = np.repeat(project("v_proj", kv_heads), heads // kv_heads, 0)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(dim)  # [h, T, T]
    query, key = np.arange(frames)[:, None], np.arange(frames)[None, :]
    allowed = (key <= query) & (key > query - spec.sliding_window)
    scores = np.where(allowed, scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = (probs @ v).transpose(1, 0, 2).reshape(frames, heads * dim)  # [T, h*D]
    return out @ w(f"{prefix}.o_proj.weight").T


def _transformer(x: np.ndarray, spec: CodecDecoderSpec, w: _Weights) -> np.ndarray:
    """Qwen3TTSTokenizerV2DecoderTransformerModel: [latent, T] -> [latent, T]."""
    t = "pre_transformer"
    h = x.T @ w(f"{t}.input_proj.weight").T + w(f"{t}.input_proj.bias")  # [T, H]
    for i in range(spec.num_hidden_layers):
        p = f"{t}.layers.{i}"
        a = _attention(
            _rms_norm(h, w(f"{p}.input_layernorm.weight"), spec.rms_norm_eps), spec, w, f"{p}.self_attn"
        )
        h = h + a * w(f"{p}.self_attn_layer_scale.scale")
        m = _rms_norm(h, w(f"{p}.post_attention_layernorm.weight"), spec.rms_norm_eps)
        gate = m @ w(f"{p}.mlp.gate_proj.weight").T
        m = (gate / (1.0 + np.exp(-gate)) * (m @ w(f"{p}.mlp.up_proj.weight").T)) @ w(
            f"{p}.mlp.down_proj.weight"
        ).T
        h = h + m * w(f"{p}.mlp_layer_scale.scale")
    h = _rms_norm(h, w(f"{t}.norm.weight"), spec.rms_norm_eps)
    return (h @ w(f"{t}.output_proj.weight").T + w(f"{t}.output_proj.bias")).T  # [latent, T]


def _convnext(x: np.ndarray, w: _Weights, module: str) -> np.ndarray:
    """ConvNeXt block: causal depthwise k7 -> LayerNorm -> pwconv1 -> GELU(erf) -> pwconv2 -> gamma, + x."""
    h = causal_conv(x, w, f"{module}.dwconv", groups=x.shape[0]).T  # [S, C]
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + _LAYER_NORM_EPS)
    h = h * w(f"{module}.norm.weight") + w(f"{module}.norm.bias")
    h = h @ w(f"{module}.pwconv1.weight").T + w(f"{module}.pwconv1.bias")  # [S, 4C]
    h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
    h = h @ w(f"{module}.pwconv2.weight").T + w(f"{module}.pwconv2.bias")  # [S, C]
    return x + (h * w(f"{module}.gamma")).T


def decode_unclamped(
    codes: np.ndarray, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray]
) -> np.ndarray:
    """codes [T, Q] -> waveform [T * decode_upsample_rate] float64, before the clamp to [-1, 1]."""
    w = _Weights(weights)
    x = _quantizer_decode(np.asarray(codes), spec, w)  # [codebook_dim, T]
    x = causal_conv(x, w, "pre_conv")  # [latent, T]
    x = _transformer(x, spec, w)
    for j, factor in enumerate(spec.upsampling_ratios):
        x = causal_trans_conv(x, w, f"upsample.{j}.0", factor)
        x = _convnext(x, w, f"upsample.{j}.1")
    x = causal_conv(x, w, "decoder.0")  # [decoder_dim, S]
    for b, rate in enumerate(spec.upsample_rates):
        block = f"decoder.{b + 1}.block"
        x = causal_trans_conv(snake(x, w, f"{block}.0"), w, f"{block}.1", rate)
        for u, dilation in enumerate((1, 3, 9)):
            unit = f"{block}.{u + 2}"
            h = causal_conv(snake(x, w, f"{unit}.act1"), w, f"{unit}.conv1", dilation=dilation)
            x = x + causal_conv(snake(h, w, f"{unit}.act2"), w, f"{unit}.conv2")
    last = len(spec.upsample_rates) + 1
    x = causal_conv(snake(x, w, f"decoder.{last}"), w, f"decoder.{last + 1}")  # [1, samples]
    return x[0]
