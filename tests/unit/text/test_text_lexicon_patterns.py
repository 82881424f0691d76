"""Lexicon patterns run on RE2: a pattern that loads cannot stall, one that could is refused by name."""

import threading
import time

import pytest

from qwen3tts.errors import ConfigError
from qwen3tts.text import Lexicon, prepare, reload_lexicon
from qwen3tts.text.lexicon import MAX_ENTRY_CHARS, MAX_PATTERNS, MAX_WORDS


def test_the_reported_pattern_loads_and_answers_the_reported_input_at_once():
    # Python's re takes ~1.4 s on 22 'a' with this pattern and 4x longer per two more; 40 is days. RE2 reads
    # it in microseconds: a bound of 30 s tells the two apart on any machine, however loaded.
    lexicon = Lexicon.from_dict({"patterns": {r"(\w+\s?)+$": "x"}})
    started = time.perf_counter()
    said = lexicon.apply("a" * 40 + "!")
    assert time.perf_counter() - started < 30
    assert said == "a" * 40 + "!"  # `$` comes after '!', which \w does not match: no replacement
    assert lexicon.apply("some words") == "x"


def test_the_reported_input_through_prepare_with_the_pattern_loaded_is_quick():
    lexicon = Lexicon.from_dict({"patterns": {r"(\w+\s?)+$": "x", r"(a|aa)+$": "y"}})
    started = time.perf_counter()
    prepared = prepare("a" * 1999 + "!", "en", lexicon=lexicon)
    assert time.perf_counter() - started < 30  # backtracking on 1999 'a' would never end
    assert prepared.pieces


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(?<=Pl\.)\s*(\d+)", "look-behind is not supported"),
        (r"(?<!\d)12", "negative look-behind"),
        (r"Gate(?= B)", "look-ahead is not supported"),
        (r"(?!x)y", "negative look-ahead"),
        (r"(a)\1", "invalid escape sequence"),
        (r"(?>a+)b", "atomic groups"),
        (r"a++", "bad repetition operator"),
        (r"end\Z", "write \\z"),
        (r"(unclosed", "missing )"),
        (r"a{1001}", "invalid repetition size"),
    ],
)
def test_a_pattern_re2_cannot_match_in_linear_time_is_refused_naming_it(tmp_path, pattern, reason):
    path = tmp_path / "lexicon.yaml"
    path.write_text(f"patterns:\n  '{pattern}': x\n", encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        Lexicon.load(path)
    message = str(error.value)
    assert f"patterns[{pattern!r}]" in message and str(path) in message
    assert "RE2" in message and reason in message


def test_a_refused_pattern_on_reload_keeps_the_previous_lexicon(tmp_path, caplog):
    path = tmp_path / "lexicon.yaml"
    path.write_text("patterns: {'\\bPl\\. ?(\\d+)': 'Platform \\1'}", encoding="utf-8")
    current = reload_lexicon(path, None)
    path.write_text("patterns: {'(?<=a)b': c}", encoding="utf-8")
    with caplog.at_level("ERROR"):
        assert reload_lexicon(path, current) is current
    assert "(?<=a)b" in caplog.text and "look-behind" in caplog.text
    assert current.apply("Pl. 4") == "Platform 4"


def test_python_pattern_features_re2_shares_still_work():
    lexicon = Lexicon.from_dict(
        {
            "patterns": {
                r"(?i)\bwifi\b": "why fye",
                r"\bPl\. ?(?P<n>\d+)": r"Platform \g<n>",
                r"(?m)^Hbf": "Hauptbahnhof",
                r"\b(\d+)x(\d+)\b": r"\1 by \2",
                r"[\p{Han}]+站": r"\g<0>车站",
            }
        }
    )
    assert lexicon.apply("WIFI at Pl. 4, 3x4") == "why fye at Platform 4, 3 by 4"
    assert lexicon.apply("Hbf") == "Hauptbahnhof"
    assert lexicon.apply("北京站") == "北京站车站"


def test_a_spoken_form_keeps_non_ascii_text_and_a_literal_backslash():
    lexicon = Lexicon.from_dict({"patterns": {r"\bHbf\b": "Hauptbahnhof Süd 北 \\\\ ok"}})
    assert lexicon.apply("Hbf") == "Hauptbahnhof Süd 北 \\ ok"


@pytest.mark.parametrize(
    ("say", "message"),
    [("Platform \\2", "refers to group 2"), ("x \\g<nope>", "unknown group 'nope'"), ("a\\n", "escape")],
)
def test_a_malformed_spoken_form_is_refused(say, message):
    with pytest.raises(ConfigError, match="patterns") as error:
        Lexicon.from_dict({"patterns": {r"Pl\. (\d+)": say}})
    assert message in str(error.value)


def test_re2_classes_are_ascii_so_unicode_words_belong_in_the_words_section():
    # Documented difference: RE2's \w and \b are ASCII; the words section sees every script.
    lexicon = Lexicon.from_dict({"words": {"café": "caffè"}, "patterns": {r"\bé": "E"}})
    assert lexicon.apply("un café") == "un caffè"
    assert Lexicon.from_dict({"patterns": {r"\bé": "E"}}).apply("café") == "cafE"


def test_an_empty_match_replaces_nothing():
    assert Lexicon.from_dict({"patterns": {r"x*": "y"}}).apply("abc") == "abc"
    assert Lexicon.from_dict({"patterns": {r"x*": "y"}}).apply("axxb") == "ayb"


def test_patterns_that_grow_the_text_without_bound_are_skipped_with_a_warning():
    doubling = {f"(?:a){{{n}}}": "aa" * n for n in range(1, 30)}  # each pattern doubles every a
    lexicon = Lexicon.from_dict({"patterns": {"a": "aa", **doubling}})
    warnings: list[str] = []
    said = lexicon.apply("a" * 200, warnings)
    assert len(said) <= 4 * 200 + 200
    assert warnings and all("skipped" in w for w in warnings)
    prepared = prepare("Say " + "a" * 200 + ".", "en", lexicon=lexicon)
    assert any("lexicon pattern" in w for w in prepared.warnings)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"words": {f"w{i}": "x" for i in range(MAX_WORDS + 1)}}, f"at most {MAX_WORDS}"),
        ({"patterns": {f"p{i}": "x" for i in range(MAX_PATTERNS + 1)}}, f"at most {MAX_PATTERNS}"),
        ({"words": {"a" * (MAX_ENTRY_CHARS + 1): "x"}}, "longer than"),
        ({"patterns": {"a": "b" * (MAX_ENTRY_CHARS + 1)}}, "longer than"),
    ],
)
def test_a_lexicon_beyond_its_bounds_is_refused(data, message):
    with pytest.raises(ConfigError) as error:
        Lexicon.from_dict(data)
    assert message in str(error.value)


def test_a_fifo_or_an_oversized_file_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "lexicon.fifo"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: _capture(outcome, Lexicon.load, fifo), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "loading a FIFO blocked"
    assert isinstance(outcome[0], ConfigError) and "not a regular file" in str(outcome[0])
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(ConfigError, match="larger than"):
        Lexicon.load(big)
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"words: {Caf\xe9: cafe}")
    with pytest.raises(ConfigError, match="not UTF-8"):
        Lexicon.load(bad)


def _capture(outcome, function, *args):
    try:
        function(*args)
    except BaseException as exc:  # the test inspects whatever it was
        outcome.append(exc)
