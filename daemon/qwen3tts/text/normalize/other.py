"""German, French, Spanish, Italian, Portuguese, Russian, Japanese, Korean: num2words says the numbers.

These languages get the announcer's core: cardinals and decimals, times, prices, percentages, the
common units, and codes read digit by digit. The words below are how each language names a unit or a
currency (words.py); number words always come from num2words. Korean times stay as written (Korean says hours
with native numbers, which num2words does not produce).
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import cache, partial

from num2words import num2words

from qwen3tts.text.normalize.scanner import (
    MAX_CARDINAL_DIGITS,
    NUMBER,
    URL,
    Rule,
    keep,
    rewrite,
    rule,
    scientific,
)
from qwen3tts.text.normalize.words import WORDS, Words


def normalize(text: str, language: str) -> str:
    return rewrite(text, _rules(language)) if language in WORDS else text


def _cardinal(number: str, words: Words) -> str:
    whole, fraction = _parts(number, words)
    if (len(whole) > 1 and whole.startswith("0") and not fraction) or len(whole) > MAX_CARDINAL_DIGITS:
        said = _digits(whole, words)
    else:
        said = num2words(int(whole), lang=words.code)
    return f"{said}{words.joiner}{words.point}{words.joiner}{_digits(fraction, words)}" if fraction else said


_GROUPED = {
    True: re.compile(r"[1-9]\d{0,2}(?:\.\d{3})+(?:,\d+)?"),
    False: re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"),
}


def _parts(number: str, words: Words) -> tuple[str, str]:
    """(whole digits, fraction digits) of a number as `words`' language writes it.

    Thousands groups are dropped (1.250,50 or 1,250.50); in a decimal-comma language a point that
    does not group thousands (0.555, 12.5) is read as the decimal point people meant.
    """
    thousands, decimal = (".", ",") if words.decimal_comma else (",", ".")
    if _GROUPED[words.decimal_comma].fullmatch(number):
        number = number.replace(thousands, "")
    elif words.decimal_comma:
        number = number.replace(".", ",")
    whole, _, fraction = number.partition(decimal)
    return whole, fraction


def _digits(number: str, words: Words) -> str:
    return words.joiner.join(num2words(int(ch), lang=words.code) for ch in number if ch.isdigit())


@cache
def _rules(language: str) -> tuple[Rule, ...]:
    words = WORDS[language]
    number = _number_pattern(words)
    units = "|".join(re.escape(u) for u in sorted(words.units, key=len, reverse=True))
    j = words.joiner
    return (
        rule("url", URL, keep),
        rule("scientific", scientific(number), partial(_power, words)),
        rule(
            "time",
            r"(?<!\d)(?P<h>\d{1,2})(?::|\s?h\s?)(?P<m>[0-5]\d)(?!\d)(?:\s?Uhr\b)?",
            partial(_time, words),
        ),
        rule(
            "money",
            rf"(?:€\s?(?P<amount>{number})|(?P<a2>{number})\s?(?:€|EUR\b|[Ee]uros?\b))",
            lambda m: _money(words, m["amount"] or m["a2"]),
        ),
        rule("percent", rf"(?P<n>{number})\s?%", lambda m: f"{_cardinal(m['n'], words)}{j}{words.percent}"),
        rule(
            "unit",
            rf"(?P<n>{number})\s?(?P<unit>{units})(?![\w/])",
            lambda m: f"{_cardinal(m['n'], words)}{j}{words.units[m['unit']]}",
        ),
        rule(
            "code",
            r"\b(?:(?P<letters>[A-Z]{1,3})|(?P<spaced>[A-Z]{2,4}) )(?P<num>\d{1,5})\b",
            lambda m: f"{m['letters'] or m['spaced']} {_digits(m['num'], words)}",
        ),
        rule("number", rf"(?<![A-Za-z0-9.,])(?:{number})(?![\d])", lambda m: _cardinal(m.group(0), words)),
    )


def _number_pattern(words: Words) -> str:
    """As scanner.NUMBER (never from inside a digit run, at most five thousands groups), with the
    separators of a decimal-comma language; there a point before anything but a thousands group
    (0.555, 12.5) is a decimal point too, as people write it."""
    if not words.decimal_comma:
        return NUMBER
    return r"(?<!\d)(?:[1-9]\d{0,2}(?:\.\d{3}){1,5}(?![\d.])(?:,\d+)?|\d+(?:[,.]\d+)?)"


def _time(words: Words, m: re.Match[str]) -> str | None:
    hour, minute = int(m["h"]), int(m["m"])
    if hour > 24:
        return None
    if words.time is None or words.time_full_hour is None:
        return m.group(0)
    h = num2words(hour, lang=words.code)
    if minute == 0:
        return words.time_full_hour.format(h=h)
    zero = f"{words.minute_zero} " if words.minute_zero and minute < 10 else ""
    return words.time.format(h=h, m=zero + num2words(minute, lang=words.code))


def _money(words: Words, amount: str) -> str:
    value = Decimal(_cardinal_source(amount, words))
    whole, hundredths = int(value), int((value - int(value)) * 100)
    w = _cardinal(str(whole), words)
    if not hundredths:
        return words.one_euro if whole == 1 else words.euros_whole.format(w=w)
    return words.euros.format(w=w, c=num2words(hundredths, lang=words.code))


def _power(words: Words, m: re.Match[str]) -> str:
    minus = f"{words.minus}{words.joiner}" if m["sign"] in ("-", "−") else ""
    return words.scientific.format(
        m=_cardinal(m["mantissa"], words), e=minus + _cardinal(m["exponent"], words)
    )


def _cardinal_source(number: str, words: Words) -> str:
    """1.250,50 (decimal comma), 1,250.50 or 0.55 -> 1250.50 / 0.55, for Decimal."""
    whole, fraction = _parts(number, words)
    return f"{whole}.{fraction}" if fraction else whole
