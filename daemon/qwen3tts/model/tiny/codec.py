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
from pathlib import Path

import numpy as np

from qwen3tts.model.codec_numpy import decode_unclamped
from qwen3tts.model.safetensors_io import write_safetensors
from qwen3tts.model.spec_parse import parse_codec_spec
from qwen3tts.model.tiny.codec_layout import decoder_layout, draw, encoder_layout

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
