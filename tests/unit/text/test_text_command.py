"""`qwen3tts text`: what the model gets, so an operator can check a lexicon entry without synthesising."""

import json
import subprocess
import sys

from qwen3tts.cli import EXIT_ERROR, main


def test_json_prints_the_language_and_each_piece(capsys):
    assert (
        main(["text", "--json", "--language", "en-GB", "Please welcome Dr. Smith. Gate B12 closes at 14:05."])
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["language"] == "english"
    assert document["pieces"] == [
        {"text": "Please welcome Dr. Smith.", "normalized": "Please welcome Doctor Smith."},
        {"text": "Gate B12 closes at 14:05.", "normalized": "Gate B one two closes at fourteen oh five."},
    ]


def test_auto_is_what_the_model_gets_and_the_detected_language_is_shown(capsys):
    assert main(["text", "--json", "票价¥20.5。"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["language"], document["detected"]) == ("auto", "chinese")
    assert document["pieces"][0]["normalized"] == "票价二十元五角。"


def test_the_plain_listing_shows_text_and_normalised_form(capsys):
    assert main(["text", "--language", "en", "The 14:05 to St. Albans."]) == 0
    out = capsys.readouterr().out
    assert "language: english" in out
    assert "text:       The 14:05 to St. Albans." in out
    assert "normalized: The fourteen oh five to Saint Albans." in out


def test_a_lexicon_file_and_no_normalize(tmp_path, capsys):
    lexicon = tmp_path / "site.yaml"
    lexicon.write_text("words: {Qwen3: Qwen three}\n", encoding="utf-8")
    argv = [
        "text",
        "--json",
        "--language",
        "en",
        "--lexicon",
        str(lexicon),
        "--no-normalize",
        "Qwen3 at 14:05.",
    ]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["pieces"][0]["normalized"] == "Qwen three at 14:05."


def test_the_lexicon_setting_is_used_when_no_file_is_given(tmp_path, capsys):
    lexicon = tmp_path / "site.yaml"
    lexicon.write_text("words: {Hbf: Hauptbahnhof}\n", encoding="utf-8")
    assert (
        main(["--set", f"text.lexicon={lexicon}", "text", "--json", "--language", "de", "Hbf, Gleis 3."]) == 0
    )
    assert json.loads(capsys.readouterr().out)["pieces"][0]["normalized"] == "Hauptbahnhof, Gleis drei."


def test_the_normalize_setting_turns_normalisation_off(capsys):
    assert main(["--set", "text.normalize=false", "text", "--json", "--language", "en", "Gate B12."]) == 0
    assert json.loads(capsys.readouterr().out)["pieces"][0]["normalized"] == "Gate B12."


def test_an_unknown_language_is_an_error_with_the_reason(capsys):
    assert main(["text", "--language", "yue", "早晨"]) == EXIT_ERROR
    assert "Cantonese" in capsys.readouterr().err


def test_a_broken_lexicon_is_an_error_naming_the_entry(tmp_path, capsys):
    lexicon = tmp_path / "site.yaml"
    lexicon.write_text("patterns: {'(oops': x}\n", encoding="utf-8")
    assert main(["text", "--lexicon", str(lexicon), "hello there"]) == EXIT_ERROR
    assert "not a valid regular expression" in capsys.readouterr().err


def test_the_command_reads_standard_input_as_a_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "qwen3tts", "text", "--json", "--language", "zh", "-"],
        input="请2位旅客到第2候车室。",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pieces"][0]["normalized"] == "请两位旅客到第二候车室。"
