"""`speech_tokenizer/config.json` `encoder_config` -> SpeechEncoderSpec, with MimiConfig's defaults."""

import pytest

from qwen3tts.errors import CheckpointError
from qwen3tts.model.spec_parse import parse_speech_encoder_spec
from qwen3tts.model.tiny.codec import speech_tokenizer_config


def test_the_release_encoder_config_gives_the_mimi_shapes_and_rates():
    spec = parse_speech_encoder_spec(speech_tokenizer_config("1.7b"))
    assert (spec.hidden_size, spec.num_hidden_layers, spec.num_filters) == (512, 8, 64)
    assert (spec.codebook_size, spec.codebook_dim, spec.num_valid_quantizers) == (2048, 256, 16)
    assert spec.encodec_frame_rate == 25.0 and spec.frame_rate == 12.5  # stride-2 downsample conv
    assert spec.downsample_rate == 1920 and spec.sample_rate == 24000


def test_missing_optional_fields_take_the_mimi_defaults():
    config = speech_tokenizer_config("tiny")
    for name in ("num_key_value_heads", "head_dim", "norm_eps", "rope_theta"):
        del config["encoder_config"][name]
    spec = parse_speech_encoder_spec(config)
    assert spec.num_key_value_heads == spec.num_attention_heads == 4
    assert spec.head_dim == 32 // 4 and spec.norm_eps == 1e-5 and spec.rope_theta == 10000.0


@pytest.mark.parametrize(
    ("name", "value"),
    [("use_causal_conv", False), ("pad_mode", "reflect"), ("use_conv_shortcut", True), ("audio_channels", 2)],
)
def test_an_encoder_set_up_the_graph_does_not_implement_is_a_checkpoint_error(name, value):
    config = speech_tokenizer_config("tiny")
    config["encoder_config"][name] = value
    with pytest.raises(CheckpointError, match=f"encoder_config.{name}"):
        parse_speech_encoder_spec(config)
