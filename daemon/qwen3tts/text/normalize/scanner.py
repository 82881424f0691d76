"""One left-to-right pass of rewrite rules over a sentence.

Each language lists its rules in priority order (a URL before a phone number before a plain number).
At every position the earliest match wins, ties go to the rule listed first, and the matched text is
replaced by what the rule's `say` returns; text between matches is kept. A rule that returns None
declines, and the next rule gets the same position. One pass means a rule's output is never read
again by another rule (so "fourteen oh five" is never re-read as anything).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Say = Callable[[re.Match[str]], str | None]

# ASCII only, so a URL ends where CJK text or full-width punctuation starts.
# The address part starts only where a run of its characters starts: otherwise every position inside a
# long run ("1.1.1.1...", "xxxx...") would scan the rest of the run again for an @ (quadratic).
URL = (
    r"(?:https?://|www\.)[!-~]*[A-Za-z0-9/#=_-]"
    r"|(?<![A-Za-z0-9.+_-])[A-Za-z0-9.+_-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
)


# Scientific notation, 1E-999 or 6.02e23: the mantissa's pattern is the language's number.
def scientific(number: str) -> str:
    return rf"(?<![\w.,])(?P<mantissa>{number})[eE](?P<sign>[-+−]?)(?P<exponent>\d{{1,4}})(?!\w|[.,]\d)"


# A number as written in English and Chinese text: 1,250.50 / 12.5 / 7 (no sign; rules add one).
# It never starts inside a run of digits and has at most five thousands groups: a rule that searches
# for "NUMBER %" in 2,000 digits would otherwise retry from every digit, each try running to the end
# (quadratic: 0.3 s per rule). Longer groupings are read in parts.
NUMBER = r"(?<!\d)(?:\d{1,3}(?:,\d{3}){1,5}(?:\.\d+)?|\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    say: Say


def rule(name: str, pattern: str, say: Say, flags: int = 0) -> Rule:
    """ASCII classes: \\d is 0-9 only (the libraries cannot say ٣ or ²); \\b, \\w see Latin only."""
    return Rule(name, re.compile(pattern, flags | re.ASCII), say)


def keep(match: re.Match[str]) -> str:
    """For text that must reach the model untouched (URLs, e-mail addresses)."""
    return match.group(0)


def rewrite(text: str, rules: Sequence[Rule]) -> str:
    out: list[str] = []
    position = 0
    # Each rule's next match at or after `position`; None once a rule has no match left in the text.
    matches = [item.pattern.search(text, 0) for item in rules]
    while position < len(text):
        found = _earliest(text, position, rules, matches)
        if found is None:
            break
        match, spoken = found
        out.append(text[position : match.start()])
        out.append(spoken)
        position = match.end()
    out.append(text[position:])
    return tidy("".join(out))


def _earliest(
    text: str, position: int, rules: Sequence[Rule], matches: list[re.Match[str] | None]
) -> tuple[re.Match[str], str] | None:
    """The first match at or after `position` whose rule accepts it, with what to say instead."""
    for order, match in enumerate(matches):
        if match is not None and match.start() < position:  # overtaken by an earlier replacement
            matches[order] = rules[order].pattern.search(text, position)
    while True:
        live = [(m.start(), order, m) for order, m in enumerate(matches) if m is not None]
        if not live:
            return None
        _start, order, match = min(live, key=lambda found: found[:2])
        spoken = rules[order].say(match) if match.end() > match.start() else None
        if spoken is not None:
            return match, spoken
        matches[order] = rules[order].pattern.search(text, match.start() + 1)


_BLANKS = re.compile(r"[ \t]{2,}")
# A run of spaces is tried once, from its first space: from each later one it would run to the end of
# the run again (quadratic on a text of spaces).
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<! ) +(?=[,.;:!?])")


def tidy(text: str) -> str:
    """Collapse the double spaces that replacements leave behind, and spaces before punctuation."""
    return _SPACE_BEFORE_PUNCTUATION.sub("", _BLANKS.sub(" ", text)).strip()


# The longest whole number said as a number; longer runs (an id, a card number) are read digit by digit.
# cn2an stops at 16 digits, and nobody announces a number of quadrillions.
MAX_CARDINAL_DIGITS = 15


def digits(text: str, words: Sequence[str], sep: str = " ") -> str:
    """Each digit of `text` read alone with `words[d]`, e.g. a flight number or a phone number."""
    return sep.join(words[int(ch)] for ch in text if ch.isdigit())
