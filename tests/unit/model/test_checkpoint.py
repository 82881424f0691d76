"""Release configs -> ModelSpec, and the checkpoint reader's errors, on hand-made configs and files."""

import copy
import json

import numpy as np
import pytest

from qwen3tts.errors import CheckpointError
from qwen3tts.model.checkpoint import check_shapes, codec_decoder_shapes, load_checkpoint
from qwen3tts.model.safetensors_io import SafetensorsFile, write_safetensors
from qwen3tts.model.spec import GenerationDefaults
from qwen3tts.model.spec_parse import parse_codec_spec, parse_generation, parse_model_spec
from qwen3tts.model.tensor_layout import model_tensor_shapes
from qwen3tts.model.tiny.config import GENERATION_CONFIG, model_config

TEXT_IDS = {"assistant": 77091, "<|im_start|>": 151644, "<|im_end|>": 151645, "<tts_pad>": 151671,
            "<tts_text_bos>": 151672, "<tts_text_eod>": 151673}  # fmt: skip
# The release speech_tokenizer/config.json decoder part.
CODEC_CONFIG = {
    "model_type": "qwen3_tts_tokenizer_12hz",
    "decoder_config": {
        "codebook_size": 2048, "codebook_dim": 512, "latent_dim": 1024, "decoder_dim": 1536,
        "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16,
        "num_key_value_heads": 16, "head_dim": 64, "rms_norm_eps": 1e-5, "layer_scale_initial_scale": 0.01,
        "rope_theta": 10000, "max_position_embeddings": 8000, "sliding_window": 72, "num_quantizers": 16,
        "num_semantic_quantizers": 1, "semantic_codebook_size": 4096,
        "vector_quantization_hidden_dimension": 512, "upsample_rates": [8, 5, 4, 3],
        "upsampling_ratios": [2, 2],
    },
    "encoder_valid_num_quantizers": 16, "input_sample_rate": 24000, "output_sample_rate": 24000,
    "decode_upsample_rate": 1920, "encode_downsample_rate": 1920,
}  # fmt: skip


def release_config(variant="custom_voice", shape="0.6b"):
    return model_config(variant, shape, TEXT_IDS, 151936)


def parse(config, generation=GENERATION_CONFIG, codec=CODEC_CONFIG):
    return parse_model_spec(config, generation, codec)


def test_release_0_6b_config_gives_the_documented_sizes():
    spec = parse(release_config("custom_voice", "0.6b"))
    t, cp = spec.talker, spec.code_predictor
    assert (t.hidden_size, t.intermediate_size, t.num_hidden_layers) == (1024, 3072, 28)
    assert (t.num_attention_heads, t.num_key_value_heads, t.head_dim) == (16, 8, 128)
    assert (t.vocab_size, t.text_vocab_size, t.text_hidden_size, t.num_code_groups) == (
        3072,
        151936,
        2048,
        16,
    )
    assert (t.rope_theta, t.rms_norm_eps, t.max_position_embeddings) == (1e6, 1e-6, 32768)
    assert (cp.hidden_size, cp.intermediate_size, cp.num_hidden_layers, cp.vocab_size) == (
        1024,
        3072,
        5,
        2048,
    )
    assert not cp.has_input_projection
    assert spec.size == "0b6"
    assert not spec.supports_instruct


def test_release_1_7b_config_has_the_small_to_mtp_projection():
    spec = parse(release_config("voice_design", "1.7b"))
    assert (spec.talker.hidden_size, spec.talker.intermediate_size) == (2048, 6144)
    assert spec.code_predictor.input_size == 2048
    assert spec.code_predictor.has_input_projection
    assert spec.supports_instruct


def test_release_ids_are_parsed_into_the_spec():
    spec = parse(release_config())
    assert (spec.text_ids.im_start, spec.text_ids.tts_pad, spec.text_ids.tts_eos) == (151644, 151671, 151673)
    ids = spec.codec_ids
    assert (ids.pad, ids.bos, ids.eos, ids.think, ids.nothink, ids.think_bos, ids.think_eos) == (
        2148,
        2149,
        2150,
        2154,
        2155,
        2156,
        2157,
    )
    assert spec.languages["english"] == 2050
    assert spec.languages["beijing_dialect"] == 2074


def test_speaker_ids_may_be_one_element_lists_or_plain_ints():
    as_lists = release_config()
    as_ints = copy.deepcopy(as_lists)
    as_ints["talker_config"]["spk_id"] = {k: v[0] for k, v in as_lists["talker_config"]["spk_id"].items()}
    assert as_lists["talker_config"]["spk_id"]["vivian"] == [3065]
    assert parse(as_lists).speakers == parse(as_ints).speakers
    assert parse(as_ints).speakers["vivian"] == 3065


def test_a_speaker_id_list_with_two_entries_is_rejected_naming_the_speaker():
    config = release_config()
    config["talker_config"]["spk_id"]["ryan"] = [3061, 3062]
    with pytest.raises(CheckpointError, match=r"config.json: talker_config.spk_id.ryan must be an id"):
        parse(config)


def test_dialect_false_becomes_none_and_dialect_names_are_kept():
    spec = parse(release_config())
    assert spec.speaker_dialects["vivian"] is None
    assert spec.speaker_dialects["eric"] == "sichuan_dialect"
    assert spec.speaker_dialects["dylan"] == "beijing_dialect"


def test_a_dialect_that_is_not_a_language_is_rejected():
    config = release_config()
    config["talker_config"]["spk_is_dialect"]["eric"] = "klingon_dialect"
    with pytest.raises(CheckpointError, match=r"talker_config.spk_is_dialect.eric"):
        parse(config)


def test_base_and_voice_design_have_no_speakers():
    for variant in ("base", "voice_design"):
        spec = parse(release_config(variant))
        assert spec.speakers == {}
        assert spec.speaker_dialects == {}


def test_base_speaker_encoder_falls_back_to_the_ecapa_defaults_when_only_enc_dim_is_given():
    config = release_config("base")
    assert config["speaker_encoder_config"] == {"enc_dim": 1024, "sample_rate": 24000}
    se = parse(config).speaker_encoder
    assert se is not None
    assert (se.mel_dim, se.enc_dim, se.enc_channels) == (128, 1024, (512, 512, 512, 512, 1536))
    assert (se.enc_attention_channels, se.enc_res2net_scale, se.enc_se_channels) == (128, 8, 128)


def test_only_base_has_a_speaker_encoder():
    assert parse(release_config("custom_voice")).speaker_encoder is None
    assert parse(release_config("voice_design")).speaker_encoder is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tts_model_type", "voice_clone"),
        ("tokenizer_type", "qwen3_tts_tokenizer_25hz"),
        ("tts_model_size", "7b"),
    ],
)
def test_unknown_model_type_tokenizer_or_size_is_rejected_naming_the_field(field, value):
    config = release_config()
    config[field] = value
    with pytest.raises(CheckpointError, match=f"config.json: {field} '{value}' unknown"):
        parse(config)


def test_a_missing_required_field_is_named_with_its_key_path():
    config = release_config()
    del config["talker_config"]["code_predictor_config"]["hidden_size"]
    with pytest.raises(
        CheckpointError, match=r"config.json: talker_config.code_predictor_config.hidden_size missing"
    ):
        parse(config)


def test_a_wrongly_typed_field_is_named():
    config = release_config()
    config["talker_config"]["num_hidden_layers"] = "28"
    with pytest.raises(CheckpointError, match=r"talker_config.num_hidden_layers must be int"):
        parse(config)


def test_generation_config_values_are_read_and_missing_keys_fall_back_to_wrapper_defaults():
    assert parse_generation(GENERATION_CONFIG).max_new_tokens == 8192
    assert parse_generation({}) == GenerationDefaults()
    assert parse_generation({}).max_new_tokens == 2048
    partial = parse_generation({"temperature": 0.5, "top_k": 10})
    assert (partial.temperature, partial.top_k, partial.top_p) == (0.5, 10, 1.0)


def test_codec_config_gives_decoder_sizes_and_rates():
    codec = parse_codec_spec(CODEC_CONFIG)
    assert (codec.codebook_size, codec.codebook_dim, codec.latent_dim, codec.decoder_dim) == (
        2048,
        512,
        1024,
        1536,
    )
    assert (codec.sliding_window, codec.head_dim, codec.num_quantizers) == (72, 64, 16)
    assert codec.upsample_rates == (8, 5, 4, 3)
    assert (codec.sample_rate, codec.decode_upsample_rate) == (24000, 1920)


def test_codec_config_of_another_model_type_is_rejected():
    with pytest.raises(
        CheckpointError, match=r"speech_tokenizer/config.json: model_type 'qwen3_tts_tokenizer_25hz'"
    ):
        parse_codec_spec(dict(CODEC_CONFIG, model_type="qwen3_tts_tokenizer_25hz"))


def test_documented_parameter_totals_follow_from_the_layout():
    # the release model cards: 914.6M (0.6B Base) and 1928.7M (1.7B Base) parameters
    totals = {
        shape: sum(
            int(np.prod(s)) for s in model_tensor_shapes(parse(release_config("base", shape))).values()
        )
        for shape in ("0.6b", "1.7b")
    }
    assert round(totals["0.6b"] / 1e6, 1) == 914.6
    assert round(totals["1.7b"] / 1e6, 1) == 1928.7


def test_check_shapes_names_file_and_missing_tensor(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"a": np.zeros((2, 3), np.float32)})
    weights = SafetensorsFile(tmp_path / "m.safetensors")
    with pytest.raises(CheckpointError, match=r"m.safetensors: tensor b missing"):
        check_shapes(weights, {"a": (2, 3), "b": (4,)})


def test_check_shapes_names_file_tensor_and_both_shapes(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"a": np.zeros((2, 3), np.float32)})
    weights = SafetensorsFile(tmp_path / "m.safetensors")
    with pytest.raises(
        CheckpointError, match=r"m.safetensors: tensor a has shape \[2, 3\], expected \[3, 2\]"
    ):
        check_shapes(weights, {"a": (3, 2)})


def test_codec_check_covers_every_codebook_and_the_first_decoder_layers():
    shapes = codec_decoder_shapes(parse_codec_spec(CODEC_CONFIG))
    codebooks = [name for name in shapes if name.endswith("_codebook.embedding_sum")]
    assert len(codebooks) == 16
    assert shapes["decoder.quantizer.rvq_rest.vq.layers.14._codebook.embedding_sum"] == (2048, 256)
    assert shapes["decoder.pre_conv.conv.weight"] == (1024, 512, 3)


def test_loading_a_directory_without_config_names_the_file(tmp_path):
    with pytest.raises(CheckpointError, match=r"config.json: file missing"):
        load_checkpoint(tmp_path)


def test_loading_a_nonexistent_directory_names_it(tmp_path):
    with pytest.raises(CheckpointError, match=r"nowhere: checkpoint directory missing"):
        load_checkpoint(tmp_path / "nowhere")


def test_invalid_json_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(release_config()))
    (tmp_path / "generation_config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"generation_config.json: not valid JSON"):
        load_checkpoint(tmp_path)
