"""The site lexicon: words and patterns -> how they are said, applied before normalisation."""

import pytest

from qwen3tts.errors import ConfigError
from qwen3tts.text import Lexicon, prepare, reload_lexicon

SITE = """
words:
  Qwen3: Qwen three
  Rd.: Road
  Qwen3 Max: Qwen three max
  Hbf: Hauptbahnhof
patterns:
  '\\bPl\\. ?(\\d+)': 'Platform \\1'
  '(?i)\\bwifi\\b': 'why fye'
"""


@pytest.fixture
def site_lexicon(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text(SITE, encoding="utf-8")
    return Lexicon.load(path)


def test_words_are_replaced_whole_and_the_longest_entry_wins(site_lexicon):
    assert site_lexicon.apply("Qwen3 Max and Qwen3 at 5 Station Rd.") == (
        "Qwen three max and Qwen three at 5 Station Road"
    )


def test_a_word_entry_never_matches_inside_another_word(site_lexicon):
    assert site_lexicon.apply("Qwen35 and MyQwen3 stay") == "Qwen35 and MyQwen3 stay"


def test_a_replacement_is_not_replaced_again():
    lexicon = Lexicon.from_dict({"words": {"A": "B", "B": "C"}})
    assert lexicon.apply("A B") == "B C"


def test_patterns_use_groups_and_flags(site_lexicon):
    assert site_lexicon.apply("Pl. 4 has WiFi") == "Platform 4 has why fye"


def test_the_lexicon_runs_before_normalisation(site_lexicon):
    prepared = prepare("The train waits at Pl. 4 near Station Rd.", "en", lexicon=site_lexicon)
    assert prepared.pieces[0].normalized == "The train waits at Platform four near Station Road"
    assert prepared.pieces[0].text == "The train waits at Pl. 4 near Station Rd."


def test_the_lexicon_still_applies_when_normalisation_is_off(site_lexicon):
    prepared = prepare("Qwen3 leaves Pl. 4 at 14:05.", "en", normalize=False, lexicon=site_lexicon)
    assert prepared.pieces[0].normalized == "Qwen three leaves Platform 4 at 14:05."
    assert prepared.normalized is False


def test_an_empty_file_is_an_empty_lexicon(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("", encoding="utf-8")
    lexicon = Lexicon.load(path)
    assert len(lexicon) == 0
    assert lexicon.apply("Gate B12") == "Gate B12"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- a list", "expected a mapping"),
        ("words: [a, b]", "words: expected a mapping"),
        ("sayings: {a: b}", "unknown key(s) sayings"),
        ("words: {Qwen3: [Qwen, three]}", "spoken form must be text"),
        ("patterns: {'(unclosed': x}", "not a valid regular expression"),
        ("patterns: {'Pl\\. (\\d+)': 'Platform \\2'}", "refers to group 2"),
        ("patterns: {'Pl': 'Platform \\g<number>'}", "unknown group 'number'"),
        ("words: {a: b", "not valid YAML"),
    ],
)
def test_a_bad_lexicon_is_a_config_error_naming_the_entry(tmp_path, content, message):
    path = tmp_path / "lexicon.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match="lexicon") as error:
        Lexicon.load(path)
    assert message in str(error.value)


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        Lexicon.load(tmp_path / "missing.yaml")


def test_reloading_picks_up_an_edited_file(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text("words: {Hbf: Hauptbahnhof}", encoding="utf-8")
    before = Lexicon.load(path)
    path.write_text("words: {Hbf: Hauptbahnhof Süd}", encoding="utf-8")
    after = Lexicon.load(path)
    assert before.apply("Hbf") == "Hauptbahnhof"
    assert after.apply("Hbf") == "Hauptbahnhof Süd"


def test_a_reload_that_fails_keeps_the_previous_lexicon_and_says_why(tmp_path, caplog):
    path = tmp_path / "lexicon.yaml"
    path.write_text("words: {Hbf: Hauptbahnhof}", encoding="utf-8")
    current = reload_lexicon(path, None)
    path.write_text("patterns: {'(broken': x}", encoding="utf-8")
    with caplog.at_level("ERROR"):
        assert reload_lexicon(path, current) is current
    assert "not a valid regular expression" in caplog.text
    assert current.apply("Hbf") == "Hauptbahnhof"


def test_a_reload_of_a_fixed_file_takes_the_new_entries(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text("words: {Hbf: Hauptbahnhof}", encoding="utf-8")
    first = reload_lexicon(path, None)
    path.write_text("words: {Hbf: Hauptbahnhof Süd}", encoding="utf-8")
    assert reload_lexicon(path, first).apply("Hbf") == "Hauptbahnhof Süd"
    assert reload_lexicon(None, first) is None  # the setting was removed: no lexicon
