"""Release-like `config.json` / `generation_config.json` contents for random checkpoints.

Real field names and the real codec ids everywhere (codec vocabulary 3072 and codebook 2048, so the
official suppress range `[vocab - 1024, vocab)` works); only the sizes shrink for the tiny shapes.
Shapes:
- "0.6b" / "1.7b": the documented release sizes, for benchmarks.
- "tiny": 0.6B style (code predictor as wide as the talker, so no small_to_mtp_projection,
  attention width 2x hidden as in the real 0.6B, text hidden != talker hidden).
- "tiny-1.7b": 1.7B style (talker 64 != code predictor 32, so small_to_mtp_projection exists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SHAPES = ("tiny", "tiny-1.7b", "0.6b", "1.7b")
RANDOM_WEIGHTS_KEY = "qwen3tts_random_weights"
"""config.json key that marks a checkpoint written here: `build` records it, `inspect`/status show it.
The official loader keeps unknown config keys as attributes and otherwise ignores them."""
REAL_TEXT_VOCAB_SIZE = 151936

CODEC_SPECIAL_IDS = {
    "codec_pad_id": 2148,
    "codec_bos_id": 2149,
    "codec_eos_token_id": 2150,
    "codec_think_id": 2154,
    "codec_nothink_id": 2155,
    "codec_think_bos_id": 2156,
    "codec_think_eos_id": 2157,
}
LANGUAGE_IDS = {
    "chinese": 2055,
    "english": 2050,
    "german": 2053,
    "italian": 2070,
    "portuguese": 2071,
    "spanish": 2054,
    "japanese": 2058,
    "korean": 2064,
    "french": 2061,
    "russian": 2069,
    "beijing_dialect": 2074,
    "sichuan_dialect": 2062,
}
SPEAKER_IDS = {
    "serena": 3066,
    "vivian": 3065,
    "uncle_fu": 3010,
    "ryan": 3061,
    "aiden": 2861,
    "ono_anna": 2873,
    "sohee": 2864,
    "eric": 2875,
    "dylan": 2878,
}
SPEAKER_DIALECTS = {"eric": "sichuan_dialect", "dylan": "beijing_dialect"}

# What the official wrapper samples with; the release file also sets max_new_tokens 8192.
GENERATION_CONFIG = {
    "do_sample": True,
    "max_new_tokens": 8192,
    "repetition_penalty": 1.05,
    "subtalker_dosample": True,
    "subtalker_temperature": 0.9,
    "subtalker_top_k": 50,
    "subtalker_top_p": 1.0,
    "temperature": 0.9,
    "top_k": 50,
    "top_p": 1.0,
}


@dataclass(frozen=True)
class Dims:
    """The sizes that differ between shapes."""

    size: str  # tts_model_size
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    mrope_section: tuple[int, int, int]  # sums to head_dim / 2
    text_hidden: int
    cp_hidden: int
    cp_intermediate: int
    cp_layers: int
    cp_heads: int
    cp_kv_heads: int
    cp_head_dim: int
    speaker_encoder: dict[str, Any]  # speaker_encoder_config beyond enc_dim / sample_rate


_TINY_ECAPA = {
    "mel_dim": 128,  # extract_speaker_embedding hard-codes 128 mels
    "enc_channels": [32, 32, 32, 32, 96],
    "enc_kernel_sizes": [5, 3, 3, 3, 1],
    "enc_dilations": [1, 2, 3, 4, 1],
    "enc_attention_channels": 16,
    "enc_res2net_scale": 4,
    "enc_se_channels": 16,
}
DIMS = {
    "0.6b": Dims("0b6", 1024, 3072, 28, 16, 8, 128, (24, 20, 20), 2048, 1024, 3072, 5, 16, 8, 128, {}),
    "1.7b": Dims("1b7", 2048, 6144, 28, 16, 8, 128, (24, 20, 20), 2048, 1024, 3072, 5, 16, 8, 128, {}),
    "tiny": Dims("0b6", 32, 96, 2, 4, 2, 16, (3, 3, 2), 64, 32, 96, 2, 4, 2, 16, _TINY_ECAPA),
    "tiny-1.7b": Dims("1b7", 64, 192, 2, 4, 2, 16, (3, 3, 2), 64, 32, 96, 2, 4, 2, 16, _TINY_ECAPA),
}


def model_config(variant: str, shape: str, text_ids: dict[str, int], text_vocab_size: int) -> dict[str, Any]:
    """The main `config.json`; `text_ids` are the tokenizer's ids of the special text tokens."""
    d = DIMS[shape]
    return {
        "architectures": ["Qwen3TTSForConditionalGeneration"],
        "assistant_token_id": text_ids["assistant"],
        "dtype": "bfloat16",
        "im_end_token_id": text_ids["<|im_end|>"],
        "im_start_token_id": text_ids["<|im_start|>"],
        "model_type": "qwen3_tts",
        RANDOM_WEIGHTS_KEY: True,
        "speaker_encoder_config": {"enc_dim": d.hidden, "sample_rate": 24000, **d.speaker_encoder},
        "talker_config": talker_config(variant, d, text_vocab_size),
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",
        "transformers_version": "4.57.3",
        "tts_bos_token_id": text_ids["<tts_text_bos>"],
        "tts_eos_token_id": text_ids["<tts_text_eod>"],
        "tts_model_size": d.size,
        "tts_model_type": variant,
        "tts_pad_token_id": text_ids["<tts_pad>"],
    }


def talker_config(variant: str, d: Dims, text_vocab_size: int) -> dict[str, Any]:
    custom = variant == "custom_voice"
    return {
        "attention_bias": False,
        "attention_dropout": 0,
        "code_predictor_config": code_predictor_config(d),
        **CODEC_SPECIAL_IDS,
        "codec_language_id": dict(LANGUAGE_IDS),
        "head_dim": d.head_dim,
        "hidden_act": "silu",
        "hidden_size": d.hidden,
        "initializer_range": 0.02,
        "intermediate_size": d.intermediate,
        "max_position_embeddings": 32768,
        "num_attention_heads": d.heads,
        "num_code_groups": 16,
        "num_hidden_layers": d.layers,
        "num_key_value_heads": d.kv_heads,
        "position_id_per_seconds": 13,
        "rms_norm_eps": 1e-06,
        "rope_scaling": {"interleaved": True, "mrope_section": list(d.mrope_section), "rope_type": "default"},
        "rope_theta": 1000000,
        # the release stores each preset speaker id as a one-element list
        "spk_id": {name: [code] for name, code in SPEAKER_IDS.items()} if custom else {},
        "spk_is_dialect": {name: SPEAKER_DIALECTS.get(name, False) for name in SPEAKER_IDS} if custom else {},
        "text_hidden_size": d.text_hidden,
        "text_vocab_size": text_vocab_size,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 3072,
    }


def code_predictor_config(d: Dims) -> dict[str, Any]:
    return {
        "attention_bias": False,
        "attention_dropout": 0,
        "head_dim": d.cp_head_dim,
        "hidden_act": "silu",
        "hidden_size": d.cp_hidden,
        "initializer_range": 0.02,
        "intermediate_size": d.cp_intermediate,
        "layer_types": ["full_attention"] * d.cp_layers,
        "max_length": 20,
        "max_position_embeddings": 65536,
        "max_window_layers": 28,
        "num_attention_heads": d.cp_heads,
        "num_code_groups": 16,
        "num_hidden_layers": d.cp_layers,
        "num_key_value_heads": d.cp_kv_heads,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 2048,
    }
