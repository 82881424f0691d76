"""`speech_tokenizer/config.json` -> the codec's decoder and encoder specs: the field names and
fallbacks of the official config classes (the 12 Hz tokenizer's decoder_config, Mimi's encoder_config).

Pure functions over already-parsed JSON, like spec_parse.py; a value that cannot be defaulted is an
error naming the file and the key path.
"""

from __future__ import annotations

from typing import Any

from qwen3tts.errors import CheckpointError
from qwen3tts.model.release_config import CODEC_CONFIG, TOKENIZER_TYPE, ConfigSection
from qwen3tts.model.spec import CodecDecoderSpec, SpeechEncoderSpec


def parse_codec_spec(raw: Any) -> CodecDecoderSpec:
    """`speech_tokenizer/config.json`: `decoder_config` plus the top-level sample rates."""
    top = ConfigSection(raw, CODEC_CONFIG)
    model_type = top.get("model_type", TOKENIZER_TYPE)
    if model_type != TOKENIZER_TYPE:
        raise CheckpointError(
            f"{CODEC_CONFIG}: model_type {model_type!r} unknown (expected {TOKENIZER_TYPE!r})"
        )
    dec = top.sub("decoder_config")
    hidden, heads = dec.typed("hidden_size", int), dec.typed("num_attention_heads", int)
    return CodecDecoderSpec(
        codebook_size=dec.typed("codebook_size", int),
        codebook_dim=dec.typed("codebook_dim", int),  # read through kwargs upstream: no default
        latent_dim=dec.typed("latent_dim", int),
        decoder_dim=dec.typed("decoder_dim", int),
        hidden_size=hidden,
        intermediate_size=dec.typed("intermediate_size", int),
        num_hidden_layers=dec.typed("num_hidden_layers", int),
        num_attention_heads=heads,
        num_key_value_heads=dec.typed("num_key_value_heads", int),
        head_dim=dec.typed("head_dim", int, hidden // heads),
        rms_norm_eps=dec.typed("rms_norm_eps", float, 1e-5),
        layer_scale_initial_scale=dec.typed("layer_scale_initial_scale", float, 0.01),
        rope_theta=dec.typed("rope_theta", float, 10000.0),
        max_position_embeddings=dec.typed("max_position_embeddings", int, 8000),
        sliding_window=dec.typed("sliding_window", int, 72),
        num_quantizers=dec.typed("num_quantizers", int),
        num_semantic_quantizers=dec.typed("num_semantic_quantizers", int, 1),
        upsample_rates=dec.ints("upsample_rates"),
        upsampling_ratios=dec.ints("upsampling_ratios"),
        sample_rate=top.typed("output_sample_rate", int, 24000),
        decode_upsample_rate=top.typed("decode_upsample_rate", int, 1920),
    )


def parse_speech_encoder_spec(raw: Any) -> SpeechEncoderSpec:
    """`speech_tokenizer/config.json`: `encoder_config` (MimiConfig field names and defaults)."""
    top = ConfigSection(raw, CODEC_CONFIG)
    enc = top.sub("encoder_config")
    supported = {
        "use_causal_conv": True,
        "pad_mode": "constant",
        "use_conv_shortcut": False,
        "audio_channels": 1,
    }
    for name, value in supported.items():  # the only Mimi set-up the encoder graph implements
        if enc.get(name, value) != value:
            raise CheckpointError(
                f"{CODEC_CONFIG}: {enc.key(name)} {enc.get(name)!r} unsupported (expected {value!r})"
            )
    hidden, heads = enc.typed("hidden_size", int, 512), enc.typed("num_attention_heads", int, 8)
    return SpeechEncoderSpec(
        num_filters=enc.typed("num_filters", int, 64),
        kernel_size=enc.typed("kernel_size", int, 7),
        last_kernel_size=enc.typed("last_kernel_size", int, 3),
        residual_kernel_size=enc.typed("residual_kernel_size", int, 3),
        dilation_growth_rate=enc.typed("dilation_growth_rate", int, 2),
        num_residual_layers=enc.typed("num_residual_layers", int, 1),
        compress=enc.typed("compress", int, 2),
        upsampling_ratios=enc.ints("upsampling_ratios", [8, 6, 5, 4]),
        hidden_size=hidden,
        intermediate_size=enc.typed("intermediate_size", int, 2048),
        num_hidden_layers=enc.typed("num_hidden_layers", int, 8),
        num_attention_heads=heads,
        num_key_value_heads=enc.typed("num_key_value_heads", int, heads),
        head_dim=enc.typed("head_dim", int, hidden // heads),
        norm_eps=enc.typed("norm_eps", float, 1e-5),
        rope_theta=enc.typed("rope_theta", float, 10000.0),
        codebook_size=enc.typed("codebook_size", int, 2048),
        codebook_dim=enc.typed("codebook_dim", int, 256),
        vector_quantization_hidden_dimension=enc.typed(
            "vector_quantization_hidden_dimension", int, enc.typed("codebook_dim", int, 256)
        ),
        num_semantic_quantizers=enc.typed("num_semantic_quantizers", int, 1),
        num_valid_quantizers=top.typed("encoder_valid_num_quantizers", int, 16),
        frame_rate=enc.typed("frame_rate", float, 12.5),
        sample_rate=top.typed("input_sample_rate", int, 24000),
        downsample_rate=top.typed("encode_downsample_rate", int, 1920),
    )
