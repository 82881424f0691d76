"""Random checkpoints written by qwen3tts.model.tiny, read back by qwen3tts.model.checkpoint."""

import hashlib
import json
import shutil

import numpy as np
import pytest

from qwen3tts.errors import CheckpointError
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.safetensors_io import SafetensorsFile, write_safetensors
from qwen3tts.model.spec import VARIANTS
from qwen3tts.model.tiny import HEAD_GAIN, write_checkpoint

TINY_SHAPES = ("tiny", "tiny-1.7b")
RELEASE_FILES = (
    "config.json", "generation_config.json", "model.safetensors", "vocab.json", "merges.txt",
    "tokenizer_config.json", "speech_tokenizer/config.json", "speech_tokenizer/model.safetensors",
    "speech_tokenizer/preprocessor_config.json",
)  # fmt: skip
_written = {}


def tiny_checkpoint(tmp_path_factory, variant="custom_voice", shape="tiny", seed=0):
    """Write each (variant, shape, seed) once per session; tests must not modify the result."""
    key = (variant, shape, seed)
    if key not in _written:
        _written[key] = write_checkpoint(
            tmp_path_factory.mktemp(f"{variant}-{shape}-{seed}"), variant, shape, seed
        )
    return _written[key]


def editable_copy(tmp_path_factory, tmp_path, variant="custom_voice", shape="tiny"):
    target = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint(tmp_path_factory, variant, shape), target)
    return target


@pytest.mark.parametrize("shape", TINY_SHAPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_tiny_variant_and_shape_loads_with_its_release_files(tmp_path_factory, variant, shape):
    path = tiny_checkpoint(tmp_path_factory, variant, shape)
    assert [name for name in RELEASE_FILES if not (path / name).is_file()] == []
    checkpoint = load_checkpoint(path)
    spec = checkpoint.spec
    assert spec.variant == variant
    assert spec.size == ("0b6" if shape == "tiny" else "1b7")
    assert spec.code_predictor.has_input_projection == (shape == "tiny-1.7b")
    assert ("talker.code_predictor.small_to_mtp_projection.weight" in checkpoint.weights) == (
        shape == "tiny-1.7b"
    )
    assert (spec.speaker_encoder is not None) == (variant == "base")
    assert any(name.startswith("speaker_encoder.") for name in checkpoint.weights) == (variant == "base")
    head = checkpoint.weights["talker.codec_head.weight"]
    assert head.dtype == np.float32
    assert head.shape == (3072, spec.talker.hidden_size)
    assert spec.generation.max_new_tokens == 8192
    assert "decoder.pre_conv.conv.weight" in checkpoint.codec_weights


def test_main_weights_are_bf16_with_pt_metadata_and_a_few_megabytes(tmp_path_factory):
    path = tiny_checkpoint(tmp_path_factory, "base", "tiny-1.7b")
    weights = SafetensorsFile(path / "model.safetensors")
    assert {info.dtype for info in weights.tensors.values()} == {"BF16"}
    assert weights.metadata == {"format": "pt"}
    assert (path / "model.safetensors").stat().st_size < 10 * 2**20


def test_custom_voice_has_the_nine_release_speakers_stored_as_lists(tmp_path_factory):
    path = tiny_checkpoint(tmp_path_factory, "custom_voice", "tiny")
    talker = json.loads((path / "config.json").read_text())["talker_config"]
    assert talker["spk_id"]["vivian"] == [3065]
    assert talker["spk_is_dialect"]["vivian"] is False
    spec = load_checkpoint(path).spec
    assert spec.speakers == {"serena": 3066, "vivian": 3065, "uncle_fu": 3010, "ryan": 3061, "aiden": 2861,
                             "ono_anna": 2873, "sohee": 2864, "eric": 2875, "dylan": 2878}  # fmt: skip
    assert spec.speaker_dialects["eric"] == "sichuan_dialect"
    assert spec.speaker_dialects["dylan"] == "beijing_dialect"


def test_config_text_ids_point_at_the_tokenizers_special_tokens(tmp_path_factory):
    path = tiny_checkpoint(tmp_path_factory)
    added = json.loads((path / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    ids = {entry["content"]: int(token_id) for token_id, entry in added.items()}
    spec = load_checkpoint(path).spec
    assert spec.text_ids.im_start == ids["<|im_start|>"]
    assert spec.text_ids.im_end == ids["<|im_end|>"]
    assert (spec.text_ids.tts_pad, spec.text_ids.tts_bos, spec.text_ids.tts_eos) == (
        ids["<tts_pad>"],
        ids["<tts_text_bos>"],
        ids["<tts_text_eod>"],
    )
    assert max(ids.values()) < spec.talker.text_vocab_size


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_arguments_write_byte_identical_files(tmp_path_factory, tmp_path, variant):
    first = tiny_checkpoint(tmp_path_factory, variant, "tiny")
    second = write_checkpoint(tmp_path / "again", variant, "tiny", seed=0)
    for name in RELEASE_FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_another_seed_draws_other_weights(tmp_path_factory):
    a = load_checkpoint(tiny_checkpoint(tmp_path_factory, "custom_voice", "tiny", seed=0)).weights
    b = load_checkpoint(tiny_checkpoint(tmp_path_factory, "custom_voice", "tiny", seed=1)).weights
    assert not np.array_equal(a["talker.codec_head.weight"], b["talker.codec_head.weight"])


def test_each_tensor_is_drawn_independently_of_which_other_tensors_exist(tmp_path_factory):
    # base has a speaker encoder on top of the same talker: the talker tensors must not move
    base = load_checkpoint(tiny_checkpoint(tmp_path_factory, "base", "tiny")).weights
    custom = load_checkpoint(tiny_checkpoint(tmp_path_factory, "custom_voice", "tiny")).weights
    shared = [name for name in custom if name in base]
    assert len(shared) == len(custom)
    for name in shared:
        np.testing.assert_array_equal(base[name], custom[name], err_msg=name)


def test_weights_are_not_degenerate(tmp_path_factory):
    checkpoint = load_checkpoint(tiny_checkpoint(tmp_path_factory, "base", "tiny-1.7b"))
    w, hidden = checkpoint.weights, checkpoint.spec.talker.hidden_size
    zeros = [name for name in w if not np.any(w[name])]
    assert zeros == []
    norm = w["talker.model.layers.0.input_layernorm.weight"]
    assert norm.min() >= 0.8 and norm.max() <= 1.2 and norm.std() > 0.05
    assert abs(float(w["talker.text_projection.linear_fc1.bias"].std()) - 0.01) < 0.005
    assert abs(float(w["talker.model.codec_embedding.weight"].std()) - 1.0) < 0.05
    q = w["talker.model.layers.0.self_attn.q_proj.weight"]
    assert abs(float(q.std()) * hidden**0.5 - 1.0) < 0.1
    head = w["talker.codec_head.weight"]
    assert abs(float(head.std()) * hidden**0.5 - HEAD_GAIN) < 0.2


def test_missing_weight_file_is_named(tmp_path_factory, tmp_path):
    path = editable_copy(tmp_path_factory, tmp_path)
    (path / "speech_tokenizer" / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"speech_tokenizer/model.safetensors: file missing"):
        load_checkpoint(path)


def test_missing_codec_config_is_named(tmp_path_factory, tmp_path):
    path = editable_copy(tmp_path_factory, tmp_path)
    (path / "speech_tokenizer" / "config.json").unlink()
    with pytest.raises(CheckpointError, match=r"speech_tokenizer/config.json: file missing"):
        load_checkpoint(path)


def _rewrite_weights(path, edit):
    weights = SafetensorsFile(path / "model.safetensors")
    tensors = {name: np.array(weights[name]) for name in weights}
    edit(tensors)
    del weights
    write_safetensors(path / "model.safetensors", tensors, dtype="BF16")


def test_missing_tensor_names_file_and_tensor(tmp_path_factory, tmp_path):
    path = editable_copy(tmp_path_factory, tmp_path, "base", "tiny")
    _rewrite_weights(path, lambda t: t.pop("speaker_encoder.fc.weight"))
    with pytest.raises(CheckpointError, match=r"model.safetensors: tensor speaker_encoder.fc.weight missing"):
        load_checkpoint(path)


def test_wrong_shape_names_file_tensor_and_both_shapes(tmp_path_factory, tmp_path):
    path = editable_copy(tmp_path_factory, tmp_path, "custom_voice", "tiny-1.7b")
    name = "talker.code_predictor.lm_head.3.weight"
    _rewrite_weights(path, lambda t: t.update({name: t[name][:, :16]}))
    with pytest.raises(
        CheckpointError,
        match=rf"model.safetensors: tensor {name} has shape \[2048, 16\], expected \[2048, 32\]",
    ):
        load_checkpoint(path)


def test_unknown_model_type_is_named(tmp_path_factory, tmp_path):
    path = editable_copy(tmp_path_factory, tmp_path)
    config = json.loads((path / "config.json").read_text())
    config["tts_model_type"] = "singing"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"config.json: tts_model_type 'singing' unknown"):
        load_checkpoint(path)


def test_file_sha256_hashes_the_named_file(tmp_path_factory):
    path = tiny_checkpoint(tmp_path_factory)
    checkpoint = load_checkpoint(path)
    expected = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()
    assert checkpoint.file_sha256("model.safetensors") == expected
    with pytest.raises(CheckpointError, match=r"missing.bin: file missing"):
        checkpoint.file_sha256("missing.bin")


@pytest.mark.parametrize("variant", VARIANTS)
def test_real_0_6b_configs_carry_the_documented_release_values(tmp_path, variant):
    path = write_checkpoint(tmp_path, variant, "0.6b", configs_only=True)
    assert not (path / "model.safetensors").exists()
    config = json.loads((path / "config.json").read_text())
    talker = config["talker_config"]
    assert (config["tts_model_size"], config["tts_model_type"]) == ("0b6", variant)
    assert config["tokenizer_type"] == "qwen3_tts_tokenizer_12hz"
    assert (talker["hidden_size"], talker["intermediate_size"], talker["num_hidden_layers"]) == (
        1024,
        3072,
        28,
    )
    assert (talker["num_attention_heads"], talker["num_key_value_heads"], talker["head_dim"]) == (16, 8, 128)
    assert (talker["vocab_size"], talker["text_vocab_size"], talker["text_hidden_size"]) == (
        3072,
        151936,
        2048,
    )
    assert talker["rope_scaling"] == {
        "interleaved": True,
        "mrope_section": [24, 20, 20],
        "rope_type": "default",
    }
    assert (talker["rope_theta"], talker["max_position_embeddings"], talker["rms_norm_eps"]) == (
        1000000,
        32768,
        1e-6,
    )
    assert (talker["codec_pad_id"], talker["codec_bos_id"], talker["codec_eos_token_id"]) == (
        2148,
        2149,
        2150,
    )
    assert (talker["codec_think_id"], talker["codec_nothink_id"]) == (2154, 2155)
    assert (talker["codec_think_bos_id"], talker["codec_think_eos_id"]) == (2156, 2157)
    assert talker["codec_language_id"]["english"] == 2050
    assert talker["codec_language_id"]["sichuan_dialect"] == 2062
    cp = talker["code_predictor_config"]
    assert (cp["hidden_size"], cp["intermediate_size"], cp["num_hidden_layers"], cp["vocab_size"]) == (
        1024,
        3072,
        5,
        2048,
    )
    assert (cp["num_attention_heads"], cp["num_key_value_heads"], cp["head_dim"]) == (16, 8, 128)
    assert (cp["max_position_embeddings"], cp["num_code_groups"]) == (65536, 16)
    assert config["speaker_encoder_config"] == {"enc_dim": 1024, "sample_rate": 24000}
    generation = json.loads((path / "generation_config.json").read_text())
    assert (generation["max_new_tokens"], generation["temperature"], generation["top_k"]) == (8192, 0.9, 50)
    assert generation["repetition_penalty"] == 1.05
