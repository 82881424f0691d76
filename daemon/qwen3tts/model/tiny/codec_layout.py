"""Every tensor of a random speech tokenizer: its release name, its shape and how it is drawn.

`decoder_layout` and `encoder_layout` list the `decoder.*` and `encoder.*` tensors of the official
`Qwen3TTSTokenizerV2Model` state dict for a config; `draw` makes one tensor from its own generator, so
its bytes depend only on (seed, name, shape). codec.py says why the draws are far from upstream's
`post_init` and writes the checkpoint.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Init:
    """How one tensor is drawn: N(0, scale) for "normal", U(low, high) for "uniform"."""

    kind: str  # "normal" | "uniform" | "ones"
    a: float = 0.0  # std for normal, low for uniform
    b: float = 0.0  # high for uniform


Layout = dict[str, tuple[tuple[int, ...], Init]]

_BIAS = Init("normal", 0.01)
_SCALE = Init("normal", 0.3)  # Snake alpha/beta (log domain), LayerScale, ConvNeXt gamma
_NORM = Init("uniform", 0.8, 1.2)
_CODEBOOK = Init("normal", 1.0)
_USAGE = Init("uniform", 0.5, 2.0)


def _linear(layout: Layout, prefix: str, out_f: int, in_f: int, bias: bool) -> None:
    layout[f"{prefix}.weight"] = ((out_f, in_f), Init("normal", in_f**-0.5))
    if bias:
        layout[f"{prefix}.bias"] = ((out_f,), _BIAS)


def _attention(layout: Layout, prefix: str, cfg: Mapping) -> None:
    """The q/k/v/o projections of one transformer layer (the decoder's and the encoder's share the layout)."""
    hidden, head = cfg["hidden_size"], cfg["head_dim"]
    q_dim, kv_dim = cfg["num_attention_heads"] * head, cfg["num_key_value_heads"] * head
    for name, dim in (("q_proj", q_dim), ("k_proj", kv_dim), ("v_proj", kv_dim)):
        _linear(layout, f"{prefix}.self_attn.{name}", dim, hidden, bias=False)
    _linear(layout, f"{prefix}.self_attn.o_proj", hidden, q_dim, bias=False)


def _conv(
    layout: Layout, prefix: str, out_ch: int, in_ch: int, k: int, groups: int = 1, bias: bool = True
) -> None:
    """nn.Conv1d: weight [out, in/groups, k]."""
    layout[f"{prefix}.weight"] = ((out_ch, in_ch // groups, k), Init("normal", (in_ch // groups * k) ** -0.5))
    if bias:
        layout[f"{prefix}.bias"] = ((out_ch,), _BIAS)


def _trans_conv(layout: Layout, prefix: str, in_ch: int, out_ch: int, k: int, stride: int) -> None:
    """nn.ConvTranspose1d: weight [in, out, k]; each output sample sees in*k/stride inputs."""
    layout[f"{prefix}.weight"] = ((in_ch, out_ch, k), Init("normal", (in_ch * k / stride) ** -0.5))
    layout[f"{prefix}.bias"] = ((out_ch,), _BIAS)


def _snake(layout: Layout, prefix: str, channels: int) -> None:
    layout[f"{prefix}.alpha"] = ((channels,), _SCALE)
    layout[f"{prefix}.beta"] = ((channels,), _SCALE)


def decoder_layout(dec: Mapping) -> Layout:
    """`decoder.*` of Qwen3TTSTokenizerV2Decoder: split RVQ, pre_conv, transformer, upsample, decoder."""
    out: Layout = {}
    half, cb = dec["codebook_dim"] // 2, dec["codebook_dim"]
    for group, n in (("rvq_first", 1), ("rvq_rest", dec["num_quantizers"] - 1)):
        q = f"decoder.quantizer.{group}"
        _conv(out, f"{q}.input_proj", half, cb, 1, bias=False)
        _conv(out, f"{q}.output_proj", cb, half, 1, bias=False)
        for i in range(n):
            out[f"{q}.vq.layers.{i}._codebook.embedding_sum"] = ((dec["codebook_size"], half), _CODEBOOK)
            out[f"{q}.vq.layers.{i}._codebook.cluster_usage"] = ((dec["codebook_size"],), _USAGE)
    latent, hidden = dec["latent_dim"], dec["hidden_size"]
    _conv(out, "decoder.pre_conv.conv", latent, cb, 3)
    t = "decoder.pre_transformer"
    _linear(out, f"{t}.input_proj", hidden, latent, bias=True)
    _linear(out, f"{t}.output_proj", latent, hidden, bias=True)
    out[f"{t}.norm.weight"] = ((hidden,), _NORM)
    for i in range(dec["num_hidden_layers"]):
        p = f"{t}.layers.{i}"
        _attention(out, p, dec)
        _linear(out, f"{p}.mlp.gate_proj", dec["intermediate_size"], hidden, bias=False)
        _linear(out, f"{p}.mlp.up_proj", dec["intermediate_size"], hidden, bias=False)
        _linear(out, f"{p}.mlp.down_proj", hidden, dec["intermediate_size"], bias=False)
        out[f"{p}.input_layernorm.weight"] = ((hidden,), _NORM)
        out[f"{p}.post_attention_layernorm.weight"] = ((hidden,), _NORM)
        out[f"{p}.self_attn_layer_scale.scale"] = ((hidden,), _SCALE)
        out[f"{p}.mlp_layer_scale.scale"] = ((hidden,), _SCALE)
    for j, factor in enumerate(dec["upsampling_ratios"]):
        p = f"decoder.upsample.{j}"
        _trans_conv(out, f"{p}.0.conv", latent, latent, factor, factor)
        _conv(out, f"{p}.1.dwconv.conv", latent, latent, 7, groups=latent)
        out[f"{p}.1.norm.weight"] = ((latent,), _NORM)
        out[f"{p}.1.norm.bias"] = ((latent,), _BIAS)
        _linear(out, f"{p}.1.pwconv1", 4 * latent, latent, bias=True)
        _linear(out, f"{p}.1.pwconv2", latent, 4 * latent, bias=True)
        out[f"{p}.1.gamma"] = ((latent,), _SCALE)
    _conv(out, "decoder.decoder.0.conv", dec["decoder_dim"], latent, 7)
    for b, rate in enumerate(dec["upsample_rates"]):
        p = f"decoder.decoder.{b + 1}.block"
        in_dim, out_dim = dec["decoder_dim"] >> b, dec["decoder_dim"] >> (b + 1)
        _snake(out, f"{p}.0", in_dim)
        _trans_conv(out, f"{p}.1.conv", in_dim, out_dim, 2 * rate, rate)
        for u in range(3):  # residual units with dilations 1, 3, 9
            _snake(out, f"{p}.{u + 2}.act1", out_dim)
            _conv(out, f"{p}.{u + 2}.conv1.conv", out_dim, out_dim, 7)
            _snake(out, f"{p}.{u + 2}.act2", out_dim)
            _conv(out, f"{p}.{u + 2}.conv2.conv", out_dim, out_dim, 1)
    last = len(dec["upsample_rates"]) + 1
    final_dim = dec["decoder_dim"] >> len(dec["upsample_rates"])
    _snake(out, f"decoder.decoder.{last}", final_dim)
    _conv(out, f"decoder.decoder.{last + 1}.conv", 1, final_dim, 7)
    return out


def encoder_layout(enc: Mapping) -> Layout:
    """`encoder.*` of Qwen3TTSTokenizerV2Encoder (a MimiModel without its decoder half)."""
    out: Layout = {}
    dim, idx = enc["num_filters"], 1
    _conv(out, "encoder.encoder.layers.0.conv", dim, enc["audio_channels"], enc["kernel_size"])
    for ratio in reversed(enc["upsampling_ratios"]):  # SEANet: resnet blocks, ELU, strided conv
        for _ in range(enc["num_residual_layers"]):
            p = f"encoder.encoder.layers.{idx}.block"
            _conv(out, f"{p}.1.conv", dim // enc["compress"], dim, enc["residual_kernel_size"])
            _conv(out, f"{p}.3.conv", dim, dim // enc["compress"], 1)
            idx += 1
        idx += 1  # ELU
        _conv(out, f"encoder.encoder.layers.{idx}.conv", 2 * dim, dim, 2 * ratio)
        idx, dim = idx + 1, 2 * dim
    hidden = enc["hidden_size"]
    _conv(out, f"encoder.encoder.layers.{idx + 1}.conv", hidden, dim, enc["last_kernel_size"])
    for i in range(enc["num_hidden_layers"]):
        p = f"encoder.encoder_transformer.layers.{i}"
        _attention(out, p, enc)
        _linear(out, f"{p}.mlp.fc1", enc["intermediate_size"], hidden, bias=False)
        _linear(out, f"{p}.mlp.fc2", hidden, enc["intermediate_size"], bias=False)
        for norm in ("input_layernorm", "post_attention_layernorm"):
            out[f"{p}.{norm}.weight"] = ((hidden,), _NORM)
            out[f"{p}.{norm}.bias"] = ((hidden,), _BIAS)
        out[f"{p}.self_attn_layer_scale.scale"] = ((hidden,), _SCALE)
        out[f"{p}.mlp_layer_scale.scale"] = ((hidden,), _SCALE)
    encoder_rate = enc["sampling_rate"] / float(np.prod(enc["upsampling_ratios"]))
    stride = int(encoder_rate / enc["frame_rate"])  # 25 Hz -> 12.5 Hz
    _conv(out, "encoder.downsample.conv", hidden, hidden, 2 * stride, bias=False)
    vq_dim = enc["vector_quantization_hidden_dimension"]
    n_semantic = enc["num_semantic_quantizers"]
    for group, n in (("semantic", n_semantic), ("acoustic", enc["num_quantizers"] - n_semantic)):
        q = f"encoder.quantizer.{group}_residual_vector_quantizer"
        _conv(out, f"{q}.input_proj", vq_dim, hidden, 1, bias=False)
        _conv(out, f"{q}.output_proj", hidden, vq_dim, 1, bias=False)
        for i in range(n):
            out[f"{q}.layers.{i}.codebook.initialized"] = ((1,), Init("ones"))
            out[f"{q}.layers.{i}.codebook.cluster_usage"] = ((enc["codebook_size"],), _USAGE)
            out[f"{q}.layers.{i}.codebook.embed_sum"] = (
                (enc["codebook_size"], enc["codebook_dim"]),
                _CODEBOOK,
            )
    return out


def draw(name: str, shape: tuple[int, ...], init: Init, seed: int) -> np.ndarray:
    """One tensor from its own generator, so its bytes depend only on (seed, name, shape)."""
    rng = np.random.Generator(np.random.PCG64([seed, zlib.crc32(name.encode("utf-8"))]))
    if init.kind == "normal":
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(init.a)).astype(np.float32)
    if init.kind == "uniform":
        return rng.uniform(init.a, init.b, shape).astype(np.float32)
    return np.ones(shape, np.float32)
