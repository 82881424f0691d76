"""Test helpers: random release-layout talker weights and a pure-numpy talker forward.

The numpy forward is written from the upstream modules (Qwen3TTSRMSNorm, rotate-half RoPE, q/k-normed
GQA attention, SwiGLU), independently of the graph builders, so a shared mistake is unlikely.
It runs one sequence with full causal attention over all its tokens (no cache).
"""

from __future__ import annotations

import numpy as np

from qwen3tts.model.spec import TalkerSpec

TINY_TALKER = TalkerSpec(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    rms_norm_eps=1e-6,
    rope_theta=1e4,  # not the release 1e6, so a builder that ignores spec.rope_theta fails
    vocab_size=96,
    text_vocab_size=300,
    text_hidden_size=32,
    num_code_groups=16,
    max_position_embeddings=4096,
)
TINY_CODEBOOK_SIZE = 40  # code predictor vocab (2048 in the release)


def random_talker_weights(
    spec: TalkerSpec, codebook_size: int = TINY_CODEBOOK_SIZE, seed: int = 0
) -> dict[str, np.ndarray]:
    """Variance-preserving random weights under the release key names (Linear weights [out, in])."""
    rng = np.random.default_rng(seed)

    def linear(out_dim: int, in_dim: int) -> np.ndarray:
        return (rng.standard_normal((out_dim, in_dim)) / np.sqrt(in_dim)).astype(np.float32)

    def gain(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    def table(rows: int, width: int) -> np.ndarray:
        return rng.standard_normal((rows, width)).astype(np.float32)

    h, q_width = spec.hidden_size, spec.num_attention_heads * spec.head_dim
    kv_width = spec.num_key_value_heads * spec.head_dim
    w: dict[str, np.ndarray] = {}
    for i in range(spec.num_hidden_layers):
        p = f"talker.model.layers.{i}"
        w[f"{p}.input_layernorm.weight"] = gain(h)
        w[f"{p}.post_attention_layernorm.weight"] = gain(h)
        w[f"{p}.self_attn.q_proj.weight"] = linear(q_width, h)
        w[f"{p}.self_attn.k_proj.weight"] = linear(kv_width, h)
        w[f"{p}.self_attn.v_proj.weight"] = linear(kv_width, h)
        w[f"{p}.self_attn.o_proj.weight"] = linear(h, q_width)
        w[f"{p}.self_attn.q_norm.weight"] = gain(spec.head_dim)
        w[f"{p}.self_attn.k_norm.weight"] = gain(spec.head_dim)
        w[f"{p}.mlp.gate_proj.weight"] = linear(spec.intermediate_size, h)
        w[f"{p}.mlp.up_proj.weight"] = linear(spec.intermediate_size, h)
        w[f"{p}.mlp.down_proj.weight"] = linear(h, spec.intermediate_size)
    w["talker.model.norm.weight"] = gain(h)
    w["talker.codec_head.weight"] = linear(spec.vocab_size, h)
    w["talker.model.codec_embedding.weight"] = table(spec.vocab_size, h)
    w["talker.model.text_embedding.weight"] = table(spec.text_vocab_size, spec.text_hidden_size)
    t = spec.text_hidden_size
    w["talker.text_projection.linear_fc1.weight"] = linear(t, t)
    w["talker.text_projection.linear_fc1.bias"] = (0.1 * rng.standard_normal(t)).astype(np.float32)
    w["talker.text_projection.linear_fc2.weight"] = linear(h, t)
    w["talker.text_projection.linear_fc2.bias"] = (0.1 * rng.standard_normal(h)).astype(np.float32)
    for j in range(spec.num_code_groups - 1):
        w[f"talker.code_predictor.model.codec_embedding.{j}.weight"] = table(codebook_size, h)
    return w


def _rms(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _rope(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """x [heads, S, D] rotated at integer positions [S] (float64 angles, then f32)."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2) / d)
    angles = positions[:, None] * inv_freq[None]  # [S, D/2]
    angles = np.concatenate([angles, angles], -1)
    half = d // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return (x * np.cos(angles) + rotated * np.sin(angles)).astype(np.float32)


def numpy_talker_forward(
    spec: TalkerSpec, w: dict[str, np.ndarray], embeds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """embeds [S, hidden] at positions 0..S-1 -> (logits [S, vocab], last_hidden_state [S, hidden])."""
    s, nh, nkv, d, eps = (
        embeds.shape[0],
        spec.num_attention_heads,
        spec.num_key_value_heads,
        spec.head_dim,
        spec.rms_norm_eps,
    )
    positions = np.arange(s, dtype=np.float64)
    allowed = np.tril(np.ones((s, s), dtype=bool))
    x = embeds.astype(np.float32)
    for i in range(spec.num_hidden_layers):
        p = f"talker.model.layers.{i}"
        lw = {k[len(p) + 1 :]: v for k, v in w.items() if k.startswith(p + ".")}
        h = _rms(x, lw["input_layernorm.weight"], eps)
        q = _rms((h @ lw["self_attn.q_proj.weight"].T).reshape(s, nh, d), lw["self_attn.q_norm.weight"], eps)
        k = _rms((h @ lw["self_attn.k_proj.weight"].T).reshape(s, nkv, d), lw["self_attn.k_norm.weight"], eps)
        v = (h @ lw["self_attn.v_proj.weight"].T).reshape(s, nkv, d)
        q = _rope(q.transpose(1, 0, 2), positions, spec.rope_theta)  # [nh, S, D]
        k = np.repeat(_rope(k.transpose(1, 0, 2), positions, spec.rope_theta), nh // nkv, axis=0)
        v = np.repeat(v.transpose(1, 0, 2), nh // nkv, axis=0)
        scores = np.where(allowed[None], q @ k.transpose(0, 2, 1) / np.sqrt(d), -np.inf)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attn = (probs @ v).transpose(1, 0, 2).reshape(s, nh * d)
        x = x + attn @ lw["self_attn.o_proj.weight"].T
        h = _rms(x, lw["post_attention_layernorm.weight"], eps)
        gate = h @ lw["mlp.gate_proj.weight"].T
        x = x + (_silu(gate) * (h @ lw["mlp.up_proj.weight"].T)) @ lw["mlp.down_proj.weight"].T
    hidden = _rms(x, w["talker.model.norm.weight"], eps)
    return hidden @ w["talker.codec_head.weight"].T, hidden
