"""`qwen3tts build`: every variant and size style becomes a bundle whose manifest vouches for it."""

import json
import shutil

import pytest

from qwen3tts.errors import BundleError, CheckpointError
from qwen3tts.model import bundle as layout
from qwen3tts.model.build import SOURCE_FILES, build_bundle

VARIANTS_AND_STYLES = [
    ("custom_voice", "tiny"),
    ("custom_voice", "tiny-1.7b"),
    ("voice_design", "tiny"),
    ("voice_design", "tiny-1.7b"),
    ("base", "tiny"),
    ("base", "tiny-1.7b"),
]


@pytest.mark.slow  # an int8 build with its verification: about 10 s each
@pytest.mark.parametrize(("variant", "shape"), VARIANTS_AND_STYLES)
def test_every_variant_and_size_style_builds_a_verified_int8_bundle(tiny_models, variant, shape):
    # the session's bundle (tests/support/bundles.py: build_bundle as here, made once), which other tests
    # load too; nothing here changes it
    checkpoint = tiny_models.checkpoint(variant, shape)
    bundle = tiny_models.bundle(variant, shape, "int8")
    manifest = layout.read_manifest(bundle)  # every file's hash checked against the manifest
    assert any("talker graph done" in line for line in tiny_models.build_report(variant, shape, "int8"))
    assert manifest.spec.variant == variant
    assert manifest.precision["talker"] == "int8"
    assert manifest.precision["codec"].split(" (")[0] in ("f16", "frame part f32, sample parts f16", "f32")
    names = set(manifest.files)
    assert {layout.TALKER_XML, layout.CODE_PREDICTOR_XML, layout.TEXT_TABLE, layout.CODEC_EMBEDDING} <= names
    assert manifest.codec_layout == layout.CODEC_SPLIT  # one frame part, a sample part per chunk size
    assert {layout.CODEC_FRAMES_XML, *(layout.codec_samples_xml(n) for n in manifest.codec_chunks)} <= names
    assert not any(name.startswith("codec_chunk_") for name in names)
    assert (layout.SPEAKER_ENCODER_XML in names) == (variant == "base")
    assert (layout.SPEECH_ENCODER_XML in names) == (variant == "base")  # ICL voice cloning
    assert (layout.PREDICTOR_TABLES in names) == (variant == "base")
    for name in SOURCE_FILES:
        assert manifest.source_files[name] == layout.sha256_file(checkpoint / name)
    assert manifest.versions["openvino"] and manifest.versions["nncf"]


@pytest.fixture
def built(tiny_models, tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), bundle)
    return bundle


def test_a_changed_bundle_file_is_named_when_loading(built):
    with open(built / layout.CODE_PREDICTOR_XML, "a") as handle:
        handle.write("<!-- tampered -->")
    (built / layout.TEXT_TABLE).unlink()
    with pytest.raises(BundleError) as err:
        layout.read_manifest(built)
    assert "code_predictor.xml: sha256 differs" in str(err.value)
    assert "text_table.npy: missing" in str(err.value)


def test_a_bundle_from_another_format_version_asks_for_a_rebuild(built):
    manifest = json.loads((built / layout.MANIFEST).read_text())
    manifest["format_version"] = 999
    (built / layout.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=r"format_version 999.*rebuild the bundle"):
        layout.read_manifest(built)


def test_a_directory_without_manifest_is_not_a_bundle(tmp_path):
    with pytest.raises(BundleError, match=r"no manifest\.json"):
        layout.read_manifest(tmp_path)


def test_a_checkpoint_the_builder_does_not_understand_is_refused_naming_the_field(tiny_models, tmp_path):
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(tiny_models.checkpoint("custom_voice", "tiny"), checkpoint)
    config = json.loads((checkpoint / "config.json").read_text())
    config["tts_model_type"] = "singing_voice"
    (checkpoint / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="tts_model_type"):
        build_bundle(checkpoint, tmp_path / "bundle", report=lambda line: None)
    assert not (tmp_path / "bundle").exists()
