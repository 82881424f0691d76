"""`qwen3tts text --bundle DIR` takes the languages a real (tiny) bundle declares."""

import json

from qwen3tts.cli import main
from qwen3tts.model.bundle import read_manifest


def test_languages_come_from_the_bundle_manifest(tiny_models, capsys):
    bundle = tiny_models.bundle()
    languages = sorted(read_manifest(bundle, verify_files=False).spec.languages)
    assert "english" in languages
    assert main(["text", "--json", "--bundle", str(bundle), "--language", "en-GB", "Gate B12."]) == 0
    assert json.loads(capsys.readouterr().out)["language"] == "english"
    assert main(["text", "--bundle", str(bundle), "--language", "klingon", "Gate B12."]) == 1
    assert f"known: auto, {', '.join(languages)}" in capsys.readouterr().err
