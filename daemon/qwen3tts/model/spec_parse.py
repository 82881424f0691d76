"""Release JSON configs -> ModelSpec: the field names and fallbacks of the official config classes.

Pure functions over already-parsed JSON dicts; checkpoint.py reads the files. A value the official
classes would default is defaulted the same way (so we build the model the official code would
build); a value they need and cannot default is an error naming the file and the key path.
The config file names and the checked JSON view are in release_config.py, the speech tokenizer's
config in codec_spec_parse.py; both are imported here, so `spec_parse` stays the one entry point.
"""

from __future__ import annotations

from typing import Any

from qwen3tts.errors import CheckpointError
from qwen3tts.model.codec_spec_parse import parse_codec_spec, parse_speech_encoder_spec
from qwen3tts.model.release_config import (
    CODEC_CONFIG,
    GENERATION_CONFIG,
    MODEL_CONFIG,
    TOKENIZER_TYPE,
    ConfigSection,
)
from qwen3tts.model.spec import (
    VARIANTS,
    CodecIds,
    CodePredictorSpec,
    GenerationDefaults,
    ModelSpec,
    SpeakerEncoderSpec,
    TalkerSpec,
    TextIds,
)

__all__ = [
    "CODEC_CONFIG",
    "GENERATION_CONFIG",
    "MODEL_CONFIG",
    "parse_codec_spec",
    "parse_generation",
    "parse_model_spec",
    "parse_speech_encoder_spec",
]

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


def parse_model_spec(config: Any, generation: Any, codec_config: Any) -> ModelSpec:
    """Build the spec from `config.json`, `generation_config.json` and `speech_tokenizer/config.json`."""
    top = ConfigSection(config, MODEL_CONFIG)
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
            ConfigSection(talker_cfg.get("spk_is_dialect", {}), MODEL_CONFIG, "talker_config.spk_is_dialect"),
            speakers,
            languages,
        ),
        generation=parse_generation(generation),
    )


def _talker(cfg: ConfigSection) -> TalkerSpec:
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


def _code_predictor(cfg: ConfigSection, talker_hidden: int) -> CodePredictorSpec:
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
    cfg = ConfigSection(raw, MODEL_CONFIG, "speaker_encoder_config")
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


def _id_table(cfg: ConfigSection) -> dict[str, int]:
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


def _dialects(
    cfg: ConfigSection, speakers: dict[str, int], languages: dict[str, int]
) -> dict[str, str | None]:
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
    cfg, d = ConfigSection(raw, GENERATION_CONFIG), GenerationDefaults()
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
