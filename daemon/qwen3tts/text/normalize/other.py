"""German, French, Spanish, Italian, Portuguese, Russian, Japanese, Korean: num2words says the numbers.

These languages get the announcer's core: cardinals and decimals, times, prices, percentages, the
common units, and codes read digit by digit. The words below are how each language names a unit or a
currency; number words always come from num2words. Korean times stay as written (Korean says hours
with native numbers, which num2words does not produce).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from num2words import num2words

from qwen3tts.text.normalize.scanner import MAX_CARDINAL_DIGITS, URL, Rule, keep, rewrite, rule


@dataclass(frozen=True)
class Words:
    code: str  # num2words language
    point: str
    percent: str
    time: str | None  # template with {h} and {m}; None leaves times as written
    time_full_hour: str | None
    euros: str  # template with {w} (whole euros) and {c} (cents) as the language says a price
    euros_whole: str  # template with {w} for a whole amount
    units: dict[str, str] = field(default_factory=dict)
    decimal_comma: bool = True  # 12,5 is twelve point five; 1.250 is one thousand two hundred and fifty
    joiner: str = " "
    minute_zero: str = ""  # said before minutes 1-9 (Russian: четырнадцать ноль пять)


WORDS: dict[str, Words] = {
    "german": Words(
        "de",
        "Komma",
        "Prozent",
        "{h} Uhr {m}",
        "{h} Uhr",
        "{w} Euro {c}",
        "{w} Euro",
        {
            "km/h": "Kilometer pro Stunde",
            "km": "Kilometer",
            "kg": "Kilogramm",
            "°C": "Grad Celsius",
            "m": "Meter",
            "min": "Minuten",
            "h": "Stunden",
        },
    ),
    "french": Words(
        "fr",
        "virgule",
        "pour cent",
        "{h} heures {m}",
        "{h} heures",
        "{w} euros {c}",
        "{w} euros",
        {
            "km/h": "kilomètres heure",
            "km": "kilomètres",
            "kg": "kilos",
            "°C": "degrés",
            "m": "mètres",
            "min": "minutes",
            "h": "heures",
        },
    ),
    "spanish": Words(
        "es",
        "coma",
        "por ciento",
        "{h} y {m}",
        "{h} en punto",
        "{w} euros con {c}",
        "{w} euros",
        {
            "km/h": "kilómetros por hora",
            "km": "kilómetros",
            "kg": "kilos",
            "°C": "grados",
            "m": "metros",
            "min": "minutos",
            "h": "horas",
        },
    ),
    "italian": Words(
        "it",
        "virgola",
        "per cento",
        "{h} e {m}",
        "{h}",
        "{w} euro e {c}",
        "{w} euro",
        {
            "km/h": "chilometri orari",
            "km": "chilometri",
            "kg": "chili",
            "°C": "gradi",
            "m": "metri",
            "min": "minuti",
            "h": "ore",
        },
    ),
    "portuguese": Words(
        "pt",
        "vírgula",
        "por cento",
        "{h} e {m}",
        "{h} horas",
        "{w} euros e {c}",
        "{w} euros",
        {
            "km/h": "quilómetros por hora",
            "km": "quilómetros",
            "kg": "quilos",
            "°C": "graus",
            "m": "metros",
            "min": "minutos",
            "h": "horas",
        },
    ),
    "russian": Words(
        "ru",
        "запятая",
        "процентов",
        "{h} {m}",
        "{h} ноль ноль",
        "{w} евро {c} центов",
        "{w} евро",
        {
            "km/h": "километров в час",
            "km": "километров",
            "kg": "килограммов",
            "°C": "градусов",
            "m": "метров",
            "min": "минут",
            "h": "часов",
        },
        minute_zero="ноль",
    ),
    "japanese": Words(
        "ja",
        "点",
        "パーセント",
        "{h}時{m}分",
        "{h}時",
        "{w}ユーロ{c}セント",
        "{w}ユーロ",
        {
            "km/h": "キロ毎時",
            "km": "キロ",
            "kg": "キロ",
            "°C": "度",
            "m": "メートル",
            "min": "分",
            "h": "時間",
        },
        decimal_comma=False,
        joiner="",
    ),
    "korean": Words(
        "ko",
        "점",
        "퍼센트",
        None,
        None,
        "{w}유로 {c}센트",
        "{w}유로",
        {
            "km/h": "킬로미터",
            "km": "킬로미터",
            "kg": "킬로그램",
            "°C": "도",
            "m": "미터",
            "min": "분",
            "h": "시간",
        },
        decimal_comma=False,
    ),
}


def normalize(text: str, language: str) -> str:
    words = WORDS.get(language)
    return rewrite(text, _rules(words)) if words else text


def _cardinal(number: str, words: Words) -> str:
    thousands, decimal = (".", ",") if words.decimal_comma else (",", ".")
    plain = number.replace(thousands, "") if re.search(rf"\d\{thousands}\d{{3}}(?!\d)", number) else number
    whole, _, fraction = plain.partition(decimal)
    if (len(whole) > 1 and whole.startswith("0") and not fraction) or len(whole) > MAX_CARDINAL_DIGITS:
        said = _digits(whole, words)
    else:
        said = num2words(int(whole), lang=words.code)
    return f"{said}{words.joiner}{words.point}{words.joiner}{_digits(fraction, words)}" if fraction else said


def _digits(number: str, words: Words) -> str:
    return words.joiner.join(num2words(int(ch), lang=words.code) for ch in number if ch.isdigit())


def _rules(words: Words) -> tuple[Rule, ...]:
    number = (
        r"\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:,\d+)?"
        if words.decimal_comma
        else (r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
    )
    units = "|".join(re.escape(u) for u in sorted(words.units, key=len, reverse=True))
    j = words.joiner

    def time(m: re.Match[str]) -> str | None:
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

    def money(amount: str) -> str:
        value = Decimal(_cardinal_source(amount, words))
        whole, hundredths = int(value), int((value - int(value)) * 100)
        w = _cardinal(str(whole), words)
        if not hundredths:
            return words.euros_whole.format(w=w)
        return words.euros.format(w=w, c=num2words(hundredths, lang=words.code))

    return (
        rule("url", URL, keep),
        rule("time", r"(?<!\d)(?P<h>\d{1,2})(?::|\s?h\s?)(?P<m>[0-5]\d)(?!\d)(?:\s?Uhr\b)?", time),
        rule(
            "money",
            rf"(?:€\s?(?P<amount>{number})|(?P<a2>{number})\s?(?:€|EUR\b|[Ee]uros?\b))",
            lambda m: money(m["amount"] or m["a2"]),
        ),
        rule("percent", rf"(?P<n>{number})\s?%", lambda m: f"{_cardinal(m['n'], words)}{j}{words.percent}"),
        rule(
            "unit",
            rf"(?P<n>{number})\s?(?P<unit>{units})(?![\w/])",
            lambda m: f"{_cardinal(m['n'], words)}{j}{words.units[m['unit']]}",
        ),
        rule(
            "code",
            r"\b(?P<letters>[A-Z]{1,4}) ?(?P<num>\d{2,5})\b",
            lambda m: f"{m['letters']} {_digits(m['num'], words)}",
        ),
        rule("number", rf"(?<![A-Za-z0-9.,])(?:{number})(?![\d])", lambda m: _cardinal(m.group(0), words)),
    )


def _cardinal_source(number: str, words: Words) -> str:
    """1.250,50 (decimal comma) or 1,250.50 -> 1250.50, for Decimal."""
    if words.decimal_comma:
        return number.replace(".", "").replace(",", ".")
    return number.replace(",", "")
