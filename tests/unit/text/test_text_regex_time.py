"""No regular expression of the text front end backtracks: time per character is bounded, by test.

Every compiled pattern in qwen3tts.text (module constants, every language's normaliser rules, the
lexicon's word alternation) is swept over 10,000 random and adversarial texts of up to 2,000
characters the way it is used. A normaliser rule is swept as the scanner uses it at worst: every match
declined and the search retried one character later. Any other pattern is used through finditer,
sub or a single search, so it is swept once through the text. A pattern with nested repetition
(exponential) fails the bound by orders of magnitude, one that rescans the rest of the text from every
position (the old `NUMBER ?%` rule: 0.3 s on 2,000 digits on a Zen 1, 0.085 s on an Ice Lake Xeon) by
several times on a slow machine and from a few thousand characters on a fast one; a linear one stays
far below it, also on a slow or busy machine. A case over the bound is timed twice more and the fastest
run counts, so a scheduler hiccup is not a failure.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import time

import pytest
from hostile_text import MAX_CHARS, hostile_texts

import qwen3tts.text
from qwen3tts.text import Lexicon, prepare
from qwen3tts.text.normalize import chinese, english, other
from qwen3tts.text.normalize.scanner import Rule
from qwen3tts.text.normalize.words import WORDS

SECONDS_PER_1000_CHARS = 0.010  # swept once: linear patterns take well under 1 ms per 1,000 here
# Rules with every match declined: the URL rule (its matches run to the end of a run of ASCII
# punctuation) takes up to 13 ms per 1,000 characters of 'www.www.…'; the old percent rule took 135.
RULE_SECONDS_PER_1000_CHARS = 0.050
PREPARE_SECONDS_PER_1000_CHARS = 0.25  # prepare() as a whole: 12 ms per 1,000 for prose, 75 for digits


@functools.cache
def texts() -> list[str]:
    """The 10,000 hostile texts, made when a test here first runs (1.4 s of CPU), not when a worker
    that runs none of these tests collects the module."""
    return hostile_texts(10_000)


def front_end_patterns() -> dict[str, tuple[re.Pattern[str], bool]]:
    """Every compiled pattern the text front end runs, by a name that says where it lives, with
    whether it is a normaliser rule (searched again after a declined match)."""
    found: dict[str, tuple[re.Pattern[str], bool]] = {}
    for module_info in pkgutil.walk_packages(qwen3tts.text.__path__, "qwen3tts.text."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            values = value.values() if isinstance(value, dict) else [value]
            for item in values:
                if isinstance(item, re.Pattern):
                    found[f"{module_info.name}.{name}"] = (item, False)
    rules = {"english": english.RULES, "chinese": chinese.RULES}
    rules |= {language: other._rules(language) for language in WORDS}
    for language, language_rules in rules.items():
        for item in language_rules:
            assert isinstance(item, Rule)
            found[f"{language}.{item.name}"] = (item.pattern, True)
    words = {f"Word{i}": "x" for i in range(200)} | {"Hbf": "Hauptbahnhof", "Qwen3 Max": "q", "a": "b"}
    found["lexicon words"] = (Lexicon.from_dict({"words": words})._word_pattern, False)
    return found


def distinct_patterns() -> dict[str, tuple[re.Pattern[str], bool]]:
    """front_end_patterns() with each (pattern, flags, use) once: many languages share the URL rule."""
    patterns = front_end_patterns()
    seen: dict[tuple[str, int, bool], str] = {}
    for name, (pattern, is_rule) in sorted(patterns.items()):
        seen.setdefault((pattern.pattern, pattern.flags, is_rule), name)
    return {name: patterns[name] for name in seen.values()}


def _sweep(pattern: re.Pattern[str], text: str, declined: bool = True) -> float:
    """Seconds to find every match in `text`: with `declined`, each match refused and the search
    retried one character on (the scanner's worst case), else once through as finditer does."""
    started = time.perf_counter()
    if not declined:
        for _match in pattern.finditer(text):
            pass
        return time.perf_counter() - started
    position = 0
    while position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            break
        position = match.start() + 1
    return time.perf_counter() - started


def _fastest(function, attempts: int = 3) -> float:
    return min(function() for _ in range(attempts))


def test_the_sweep_finds_the_patterns_it_must_cover():
    names = front_end_patterns()
    assert len(names) > 100  # every language's rules, the splitter, the scanner, the lexicon
    assert {"english.number", "chinese.money", "german.money", "qwen3tts.text.splitter._SPACE"} <= set(names)


def test_a_backtracking_pattern_fails_the_bound_so_the_test_can_fail():
    quadratic = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)? ?%")  # the old percent rule
    exponential = re.compile(r"(\w+\s?)+$")
    # The bound is per character and a quadratic rule's time per character grows with the length, so it
    # crosses the bound at some length on any machine: 2,000 digits took 0.3 s on a Zen 1 but 0.085 s
    # (under the bound) on an Ice Lake Xeon, 8,000 take 16 times that against 4 times the bound.
    digits = 4 * MAX_CHARS
    assert _sweep(quadratic, "9" * digits) > RULE_SECONDS_PER_1000_CHARS * digits / 1000
    assert _sweep(exponential, "a" * 18 + "!", declined=False) > SECONDS_PER_1000_CHARS * 100 / 1000


PATTERNS = distinct_patterns()


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_front_end_pattern_takes_linear_time_on_hostile_text(name):
    pattern, is_rule = PATTERNS[name]
    per_1000 = RULE_SECONDS_PER_1000_CHARS if is_rule else SECONDS_PER_1000_CHARS
    slow = []
    for text in texts():
        bound = per_1000 * max(len(text), 100) / 1000
        if (
            _sweep(pattern, text, is_rule) > bound
            and _fastest(lambda t=text: _sweep(pattern, t, is_rule)) > bound
        ):
            slow.append(f"{len(text)} chars {text[:30]!r}")
    assert not slow, f"{name} ({pattern.pattern[:80]!r}) is slow on {len(slow)} texts: {slow[:3]}"


@pytest.mark.parametrize("language", ["english", "chinese", "german", "french", "japanese", "korean"])
def test_prepare_takes_time_in_proportion_to_the_text(language):
    lexicon = Lexicon.from_dict(
        {
            "words": {"Hbf": "Hauptbahnhof"},
            "patterns": {r"(\w+\s?)+$": "x", r"(a|aa)+$": "y", r"\bPl\. ?(\d+)": r"P \1"},
        }
    )
    slow = []
    for text in texts()[:: len(texts()) // 150]:  # 150 of them through everything, third-party code too
        bound = PREPARE_SECONDS_PER_1000_CHARS * max(len(text), 200) / 1000

        def run(t=text):
            started = time.perf_counter()
            prepare(t, language, lexicon=lexicon)
            return time.perf_counter() - started

        if run() > bound and _fastest(run) > bound:
            slow.append(f"{len(text)} chars {text[:30]!r}")
    assert not slow, f"prepare({language}) is slow on {slow[:3]}"
