"""Release JSON configs -> ModelSpec: the field names and fallbacks of the official config classes.

Pure functions over already-parsed JSON dicts; checkpoint.py reads the files. A value the official
classes would default is defaulted the same way (so we build the model the official code would
build); a value they need and cannot default is an error naming the file and the key path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qwen3tts.errors import CheckpointError
from qwen3tts.model.spec import (
    VARIANTS,
    CodecDecoderSpec,
    CodecIds,
    CodePredictorSpec,
    GenerationDefaults,
    ModelSpec,
    SpeakerEncoderSpec,
    SpeechEncoderSpec,
    TalkerSpec,
    TextIds,
)

MODEL_CONFIG = "config.json"
GENERATION_CONFIG = "generation_config.json"
CODEC_CONFIG = "speech_tokenizer/config.json"
TOKENIZER_TYPE = "qwen3_tts_tokenizer_12hz"  # the only codec we implement (no public 25 Hz model)
MODEL_SIZES = ("0b6", "1b7")

# Qwen3TTSSpeakerEncoderConfig defaults: the release config only sets enc_dim and sample_rate
_SPEAKER_ENCODER_DEFAULTS = {
    "mel_dim": 128,
    "enc_channels": [512, 512, 512, 512, 1536],
    "enc_kernel_sizes": [5, 3, 3, 3, 1],
    "enc_dilations": [1, 2, 3, 4, 1],
    "enc_attention_channels": 128,
    "enc_res2net_scale": 8,
    "enc_se_channels": 128,
    "sample_rate": 24000,
}


class _Section:
    """A JSON object plus where it came from, so every error can name file and key path."""

    def __init__(self, data: Any, file: str, path: str = ""):
        if not isinstance(data, Mapping):
            raise CheckpointError(f"{file}: {path or 'top level'} is not a JSON object")
        self.data, self.file, self.path = data, file, path

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def sub(self, name: str) -> _Section:
        return _Section(self.get(name), self.file, self.key(name))

    def get(self, name: str, default: Any = ...) -> Any:
        if name in self.data:
            return self.data[name]
        if default is ...:
            raise CheckpointError(f"{self.file}: {self.key(name)} missing")
        return default

    def typed(self, name: str, kind: type, default: Any = ...) -> Any:
        value = self.get(name, default)
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise CheckpointError(f"{self.file}: {self.key(name)} must be {kind.__name__}, got {value!r}")
        return value

    def ints(self, name: str, default: Any = ...) -> tuple[int, ...]:
        value = self.get(name, default)
        if not isinstance(value, list | tuple) or not all(isinstance(v, int) for v in value):
            raise CheckpointError(f"{self.file}: {self.key(name)} must be a list of integers, got {value!r}")
        return tuple(value)


def parse_model_spec(config: Any, generation: Any, codec_config: Any) -> ModelSpec:
    """Build the spec from `config.json`, `generation_config.json` and `speech_tokenizer/config.json`."""
    top = _Section(config, MODEL_CONFIG)
    variant = top.get("tts_model_type")
    if variant not in VARIANTS:
        raise CheckpointError(
            f"{MODEL_CONFIG}: tts_model_type {variant!r} unknown (expected one of {VARIANTS})"
        )
    tokenizer_type = top.get("tokenizer_type")
    if tokenizer_type != TOKENIZER_TYPE:
        raise CheckpointError(
            f"{MODEL_CONFIG}: tokenizer_type {tokenizer_type!r} unknown (expected {TOKENIZER_TYPE!r})"
        )
    size = top.get("tts_model_size")
    if size not in MODEL_SIZES:
        raise CheckpointError(
            f"{MODEL_CONFIG}: tts_model_size {size!r} unknown (expected one of {MODEL_SIZES})"
        )
    talker_cfg = top.sub("talker_config")
    talker = _talker(talker_cfg)
    languages = _id_table(talker_cfg.sub("codec_language_id"))
    speakers = _id_table(talker_cfg.sub("spk_id"))
    return ModelSpec(
        variant=variant,
        size=size,
        talker=talker,
        code_predictor=_code_predictor(talker_cfg.sub("code_predictor_config"), talker.hidden_size),
        codec=parse_codec_spec(codec_config),
        speaker_encoder=_speaker_encoder(top.get("speaker_encoder_config", {}))
        if variant == "base"
        else None,
        text_ids=TextIds(
            im_start=top.typed("im_start_token_id", int, 151644),
            im_end=top.typed("im_end_token_id", int, 151645),
            tts_pad=top.typed("tts_pad_token_id", int, 151671),
            tts_bos=top.typed("tts_bos_token_id", int, 151672),
            tts_eos=top.typed("tts_eos_token_id", int, 151673),
        ),
        codec_ids=CodecIds(
            pad=talker_cfg.typed("codec_pad_id", int),
            bos=talker_cfg.typed("codec_bos_id", int),
            eos=talker_cfg.typed("codec_eos_token_id", int),
            think=talker_cfg.typed("codec_think_id", int),
            nothink=talker_cfg.typed("codec_nothink_id", int),
            think_bos=talker_cfg.typed("codec_think_bos_id", int),
            think_eos=talker_cfg.typed("codec_think_eos_id", int),
        ),
        languages=languages,
        speakers=speakers,
        speaker_dialects=_dialects(
            _Section(talker_cfg.get("spk_is_dialect", {}), MODEL_CONFIG, "talker_config.spk_is_dialect"),
            speakers,
            languages,
        ),
        generation=parse_generation(generation),
    )


def _talker(cfg: _Section) -> TalkerSpec:
    hidden, heads = cfg.typed("hidden_size", int), cfg.typed("num_attention_heads", int)
    return TalkerSpec(
        hidden_size=hidden,
        intermediate_size=cfg.typed("intermediate_size", int),
        num_hidden_layers=cfg.typed("num_hidden_layers", int),
        num_attention_heads=heads,
        num_key_value_heads=cfg.typed("num_key_value_heads", int),
        head_dim=cfg.typed("head_dim", int, hidden // heads),  # the official getattr fallback
        rms_norm_eps=cfg.typed("rms_norm_eps", float, 1e-6),
        rope_theta=cfg.typed("rope_theta", float, 10000.0),
        vocab_size=cfg.typed("vocab_size", int),
        text_vocab_size=cfg.typed("text_vocab_size", int),
        text_hidden_size=cfg.typed("text_hidden_size", int, 2048),
        num_code_groups=cfg.typed("num_code_groups", int),
        max_position_embeddings=cfg.typed("max_position_embeddings", int, 32768),
    )


def _code_predictor(cfg: _Section, talker_hidden: int) -> CodePredictorSpec:
    return CodePredictorSpec(
        hidden_size=cfg.typed("hidden_size", int),
        intermediate_size=cfg.typed("intermediate_size", int),
        num_hidden_layers=cfg.typed("num_hidden_layers", int),
        num_attention_heads=cfg.typed("num_attention_heads", int),
        num_key_value_heads=cfg.typed("num_key_value_heads", int),
        head_dim=cfg.typed("head_dim", int, 128),  # Qwen3TTSTalkerCodePredictorConfig default
        rms_norm_eps=cfg.typed("rms_norm_eps", float, 1e-6),
        rope_theta=cfg.typed("rope_theta", float, 10000.0),
        vocab_size=cfg.typed("vocab_size", int),
        num_code_groups=cfg.typed("num_code_groups", int),
        input_size=talker_hidden,
    )


def _speaker_encoder(raw: Any) -> SpeakerEncoderSpec:
    cfg = _Section(raw, MODEL_CONFIG, "speaker_encoder_config")
    d = _SPEAKER_ENCODER_DEFAULTS
    spec = SpeakerEncoderSpec(
        mel_dim=cfg.typed("mel_dim", int, d["mel_dim"]),
        enc_dim=cfg.typed("enc_dim", int),
        enc_channels=cfg.ints("enc_channels", d["enc_channels"]),
        enc_kernel_sizes=cfg.ints("enc_kernel_sizes", d["enc_kernel_sizes"]),
        enc_dilations=cfg.ints("enc_dilations", d["enc_dilations"]),
        enc_attention_channels=cfg.typed("enc_attention_channels", int, d["enc_attention_channels"]),
        enc_res2net_scale=cfg.typed("enc_res2net_scale", int, d["enc_res2net_scale"]),
        enc_se_channels=cfg.typed("enc_se_channels", int, d["enc_se_channels"]),
        sample_rate=cfg.typed("sample_rate", int, d["sample_rate"]),
    )
    if not len(spec.enc_channels) == len(spec.enc_kernel_sizes) == len(spec.enc_dilations):
        raise CheckpointError(
            f"{MODEL_CONFIG}: speaker_encoder_config.enc_channels, enc_kernel_sizes and enc_dilations "
            "must have the same length"
        )
    return spec


def _id_table(cfg: _Section) -> dict[str, int]:
    """`spk_id` / `codec_language_id`: name -> codec id; the release stores some ids as `[id]`."""
    table = {}
    for name, value in cfg.data.items():
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, int) or isinstance(value, bool):
            raise CheckpointError(
                f"{cfg.file}: {cfg.key(name)} must be an id or a one-element list, got {value!r}"
            )
        table[name] = value
    return table


def _dialects(cfg: _Section, speakers: dict[str, int], languages: dict[str, int]) -> dict[str, str | None]:
    """`spk_is_dialect`: speaker -> dialect language name, `false` meaning none."""
    dialects: dict[str, str | None] = {}
    for name, value in cfg.data.items():
        if value is False or value is None:
            dialects[name] = None
        elif isinstance(value, str) and value in languages:
            dialects[name] = value
        else:
            raise CheckpointError(
                f"{cfg.file}: {cfg.key(name)} must be false or a codec_language_id name, got {value!r}"
            )
    for name in speakers:
        dialects.setdefault(name, None)
    return dialects


def parse_generation(raw: Any) -> GenerationDefaults:
    """`generation_config.json`; a missing key falls back to the official wrapper's default."""
    cfg, d = _Section(raw, GENERATION_CONFIG), GenerationDefaults()
    return GenerationDefaults(
        do_sample=cfg.typed("do_sample", bool, d.do_sample),
        temperature=cfg.typed("temperature", float, d.temperature),
        top_k=cfg.typed("top_k", int, d.top_k),
        top_p=cfg.typed("top_p", float, d.top_p),
        repetition_penalty=cfg.typed("repetition_penalty", float, d.repetition_penalty),
        subtalker_dosample=cfg.typed("subtalker_dosample", bool, d.subtalker_dosample),
        subtalker_temperature=cfg.typed("subtalker_temperature", float, d.subtalker_temperature),
        subtalker_top_k=cfg.typed("subtalker_top_k", int, d.subtalker_top_k),
        subtalker_top_p=cfg.typed("subtalker_top_p", float, d.subtalker_top_p),
        max_new_tokens=cfg.typed("max_new_tokens", int, d.max_new_tokens),
    )


def parse_codec_spec(raw: Any) -> CodecDecoderSpec:
    """`speech_tokenizer/config.json`: `decoder_config` plus the top-level sample rates."""
    top = _Section(raw, CODEC_CONFIG)
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
    top = _Section(raw, CODEC_CONFIG)
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
