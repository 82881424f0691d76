"""Random speech tokenizers (`speech_tokenizer/`) in the exact release layout, without torch.

Writes `config.json`, `model.safetensors` (fp32, keys `decoder.*` and `encoder.*` exactly as the
state dict of the official `Qwen3TTSTokenizerV2Model`) and `preprocessor_config.json`.

The weights are drawn so the decoder is far from degenerate: the official `post_init` leaves codebooks,
Snake parameters and biases at zero and layer scales near identity, and the random decoder then outputs
silence that ignores the codes, which would let a parity test pass vacuously. Every tensor has its own
generator seeded from (seed, crc32(name)), so the bytes are reproducible and do not depend on the order
tensors are drawn in. Finally the last conv is scaled so the waveform rms is about 0.1 with no clipping,
by a gain measured with a numpy float64 decode and rounded to a few bits: the bytes are the same on every
CPU, and no OpenVINO runs.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwen3tts.model.codec_numpy import decode_unclamped
from qwen3tts.model.safetensors_io import write_safetensors
from qwen3tts.model.spec_parse import parse_codec_spec

SHAPES = ("tiny", "tiny-1.7b", "0.6b", "1.7b")
TARGET_RMS = 0.1
CALIBRATION_FRAMES = 16
GAIN_BITS = 8  # the output gain keeps 8 significant bits: last-bit float differences cannot move it
_FINAL_CONV = "decoder.decoder.6.conv"  # the last CausalConvNet (decoder_dim / 16 -> 1 channel)

_TINY_DECODER = dict(
    codebook_size=2048, codebook_dim=16, latent_dim=32, decoder_dim=48, hidden_size=32,
    intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
    head_dim=8, vector_quantization_hidden_dimension=16,
)  # fmt: skip
_REAL_DECODER = dict(
    codebook_size=2048, codebook_dim=512, latent_dim=1024, decoder_dim=1536, hidden_size=512,
    intermediate_size=1024, num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=16,
    head_dim=64, vector_quantization_hidden_dimension=512,
)  # fmt: skip
_TINY_ENCODER = dict(
    hidden_size=32, num_filters=4, codebook_dim=16, vector_quantization_hidden_dimension=16,
    upsample_groups=32, num_hidden_layers=1, intermediate_size=64, num_attention_heads=4,
    num_key_value_heads=4, head_dim=8,
)  # fmt: skip
_REAL_ENCODER = dict(  # MimiConfig defaults; they reproduce the release's 39.4M encoder parameters
    hidden_size=512, num_filters=64, codebook_dim=256, vector_quantization_hidden_dimension=256,
    upsample_groups=512, num_hidden_layers=8, intermediate_size=2048, num_attention_heads=8,
    num_key_value_heads=8, head_dim=64,
)  # fmt: skip


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


def speech_tokenizer_config(shape: str) -> dict:
    """The `speech_tokenizer/config.json` dict for a shape: only explicitly set fields, as a release."""
    if shape not in SHAPES:
        raise ValueError(f"unknown speech tokenizer shape {shape!r}; expected one of {SHAPES}")
    tiny = shape.startswith("tiny")
    decoder = dict(_TINY_DECODER if tiny else _REAL_DECODER)
    decoder.update(
        hidden_act="silu", rms_norm_eps=1e-5, layer_scale_initial_scale=0.01, rope_theta=10000,
        max_position_embeddings=8000, sliding_window=72, num_quantizers=16, num_semantic_quantizers=1,
        semantic_codebook_size=4096, upsample_rates=[8, 5, 4, 3], upsampling_ratios=[2, 2],
        attention_bias=False, attention_dropout=0.0,
    )  # fmt: skip
    encoder = dict(_TINY_ENCODER if tiny else _REAL_ENCODER)
    encoder.update(
        sampling_rate=24000, frame_rate=12.5, audio_channels=1, num_residual_layers=1,
        upsampling_ratios=[8, 6, 5, 4], kernel_size=7, last_kernel_size=3, residual_kernel_size=3,
        dilation_growth_rate=2, use_causal_conv=True, pad_mode="constant", compress=2,
        trim_right_ratio=1.0, codebook_size=2048, num_quantizers=32, num_semantic_quantizers=1,
        use_conv_shortcut=False, hidden_act="gelu", max_position_embeddings=8000, norm_eps=1e-5,
        rope_theta=10000.0, sliding_window=250, layer_scale_initial_scale=0.01, attention_bias=False,
        model_type="mimi",
    )  # fmt: skip
    return dict(
        architectures=["Qwen3TTSTokenizerV2Model"], model_type="qwen3_tts_tokenizer_12hz",
        encoder_config=encoder, decoder_config=decoder, encoder_valid_num_quantizers=16,
        input_sample_rate=24000, output_sample_rate=24000, decode_upsample_rate=1920,
        encode_downsample_rate=1920, dtype="float32", transformers_version="4.57.3",
    )  # fmt: skip


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


def random_speech_tokenizer_weights(config: Mapping, seed: int = 0) -> dict[str, np.ndarray]:
    """All `decoder.*` and `encoder.*` tensors, drawn but not yet calibrated."""
    layout = decoder_layout(config["decoder_config"])
    layout.update(encoder_layout(config["encoder_config"]))
    return {name: draw(name, shape, init, seed) for name, (shape, init) in layout.items()}


def calibrate_output_level(config: Mapping, weights: dict[str, np.ndarray], seed: int) -> float:
    """Scale the final conv in place so the waveform rms is about TARGET_RMS; returns the gain applied.

    Measures the unclamped level of a float64 numpy decode (codec_numpy.py) of CALIBRATION_FRAMES
    seeded random frames, and rounds the gain to GAIN_BITS significant bits: the checkpoint bytes then
    depend neither on OpenVINO (whose CPU kernels differ in the last bits between instruction sets)
    nor on last-bit differences of numpy's BLAS or transcendental functions.
    """
    spec = parse_codec_spec(config)
    rng = np.random.Generator(np.random.PCG64([seed, zlib.crc32(b"calibration codes")]))
    codes = rng.integers(0, spec.codebook_size, (CALIBRATION_FRAMES, spec.num_quantizers), dtype=np.int64)
    probe = decode_unclamped(codes, spec, weights)
    gain = round_to_bits(TARGET_RMS / float(np.sqrt(np.mean(probe**2))), GAIN_BITS)
    for leaf in ("weight", "bias"):
        weights[f"{_FINAL_CONV}.{leaf}"] *= np.float32(gain)
    return gain


def round_to_bits(value: float, bits: int) -> float:
    """`value` rounded to `bits` significant bits (a float32-exact number for bits <= 24)."""
    mantissa, exponent = math.frexp(value)  # value = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    return math.ldexp(round(mantissa * 2**bits), exponent - bits)


def write_speech_tokenizer(
    out_dir: str | Path, shape: str = "tiny", seed: int = 0, configs_only: bool = False
) -> None:
    """Write a speech tokenizer into `out_dir` (e.g. `<checkpoint>/speech_tokenizer`, or a standalone
    tokenizer repo): config.json, preprocessor_config.json and, unless `configs_only`, model.safetensors.

    Same arguments give byte-identical files.
    """
    config = speech_tokenizer_config(shape)
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    preprocessor = dict(
        chunk_length_s=None, feature_extractor_type="EncodecFeatureExtractor", feature_size=1,
        overlap=None, padding_side="right", padding_value=0.0, return_attention_mask=True,
        sampling_rate=24000,
    )  # fmt: skip
    (target / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=2) + "\n")
    if configs_only:
        return
    weights = random_speech_tokenizer_weights(config, seed)
    calibrate_output_level(config, weights, seed)
    write_safetensors(target / "model.safetensors", weights, dtype="F32")
