"""`qwen3tts inspect` on a bundle and on a checkpoint: what it declares, every hash checked."""

from __future__ import annotations

import hashlib
import shutil

from qwen3tts.cli import main


def test_inspect_verifies_every_bundle_file_and_says_the_weights_are_random(tiny_models, capsys):
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    assert main(["inspect", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "weights: random (qwen3tts tiny)" in out
    assert "files match the manifest" in out


def test_inspect_names_a_corrupt_bundle_file_and_exits_1(tiny_models, tmp_path, capsys):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), bundle)
    with open(bundle / "text_table.npy", "r+b") as table:
        table.seek(-4, 2)
        table.write(b"\x00\x01\x02\x03")
    assert main(["inspect", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert "BundleError" in err and "text_table.npy: sha256 differs from the manifest" in err


def test_inspect_lists_the_sha256_of_every_checkpoint_file(tiny_models, capsys):
    checkpoint = tiny_models.checkpoint("custom_voice", "tiny")
    assert main(["inspect", str(checkpoint)]) == 0
    out = capsys.readouterr().out
    assert "random (qwen3tts tiny) weights" in out
    for name in ("config.json", "model.safetensors", "speech_tokenizer/model.safetensors"):
        digest = hashlib.sha256((checkpoint / name).read_bytes()).hexdigest()
        assert f"{digest}  {name}" in out


def test_only_a_checkpoint_carrying_the_tiny_marker_counts_as_random(tiny_models, tmp_path):
    import json

    from qwen3tts.model.bundle import has_random_weights
    from qwen3tts.model.tiny.config import RANDOM_WEIGHTS_KEY

    checkpoint = tiny_models.checkpoint("custom_voice", "tiny")
    assert has_random_weights(checkpoint)
    release_like = tmp_path / "release"
    release_like.mkdir()
    config = json.loads((checkpoint / "config.json").read_text())
    del config[RANDOM_WEIGHTS_KEY]
    (release_like / "config.json").write_text(json.dumps(config))
    assert not has_random_weights(release_like)
