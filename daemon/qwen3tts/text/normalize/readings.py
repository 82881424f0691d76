"""One kind of reading asked for by name, in any model language: what SSML `<say-as>` needs.

The rule sets decide *what* a run of digits is; here the caller has decided (interpret-as="ordinal"),
so each function reads its input as exactly that kind, with the same libraries and words as the rules.
A value that is not of that kind raises ValueError with a message for the sender.
"""

from __future__ import annotations

import re

from num2words import num2words

from qwen3tts.text.normalize import chinese, english, normalize, other
from qwen3tts.text.normalize.scanner import MAX_CARDINAL_DIGITS
from qwen3tts.text.normalize.words import WORDS

_CHINESE = ("chinese", "sichuan_dialect", "beijing_dialect")
_NUMBER = re.compile(r"[-+−]?\d{1,15}(?:[.,]\d{1,15})?")
_TIME = re.compile(r"(?P<h>\d{1,2}):(?P<m>[0-5]\d)(?:\s?(?P<ampm>[ap]\.?m\.?))?", re.IGNORECASE)
_DATE_FORMATS = ("dmy", "mdy", "ymd", "dm", "md", "ym", "my", "d", "m", "y")
_CODES = {name: words.code for name, words in WORDS.items()}


def digits(text: str, language: str) -> str:
    """Each ASCII digit of `text` as a word; anything else in it is skipped."""
    found = [ch for ch in text if "0" <= ch <= "9"]
    if not found:
        raise ValueError(f"{text!r} holds no digits")
    return " ".join(_digit(ch, language) for ch in found)


def characters(text: str, language: str) -> str:
    """Letters one by one (as capitals) and digits as words: `B12` -> "B one two"."""
    said = [_digit(ch, language) if "0" <= ch <= "9" else ch.upper() for ch in text if ch.isalnum()]
    if not said:
        raise ValueError(f"{text!r} holds no letters or digits")
    return " ".join(said)


def cardinal(text: str, language: str) -> str:
    value = text.strip().replace(" ", "")
    if not _NUMBER.fullmatch(value):
        raise ValueError(f"{text!r} is not a number (digits, an optional sign and decimals)")
    sign, value = (value[0], value[1:]) if value[0] in "-+−" else ("", value)
    said = _cardinal(value, language)
    if sign in ("-", "−"):
        minus = "负" if language in _CHINESE else WORDS[language].minus if language in WORDS else "minus"
        return f"{minus}{said}" if language in _CHINESE else f"{minus} {said}"
    return said


def ordinal(text: str, language: str) -> str:
    value = text.strip().rstrip(".")
    if not value.isascii() or not value.isdigit() or len(value) > MAX_CARDINAL_DIGITS:
        raise ValueError(f"{text!r} is not a whole number of at most {MAX_CARDINAL_DIGITS} digits")
    if language in _CHINESE:
        return "第" + chinese.cardinal(value)
    return num2words(int(value), lang=_CODES.get(language, "en"), to="ordinal").replace(",", "")


def time(text: str, language: str) -> str:
    match = _TIME.fullmatch(text.strip())
    if match is None or int(match["h"]) > 23:
        raise ValueError(f"{text!r} is not a time (hh:mm, optionally am or pm)")
    return normalize(match.group(0), language)


def telephone(text: str, language: str) -> str:
    groups = re.findall(r"\d+", text)
    if not groups:
        raise ValueError(f"{text!r} holds no digits")
    if language in _CHINESE:
        said = "，".join(chinese.spell_phone(group) for group in groups)
        return f"加{said}" if text.strip().startswith("+") else said
    said = ", ".join(digits(group, language) for group in groups)
    return f"plus {said}" if text.strip().startswith("+") and language == "english" else said


def date(text: str, language: str, format: str | None) -> tuple[str, str | None]:
    """(the date as said, a warning or None); `format` orders the fields (dmy, ymd, md, y, ...)."""
    fields = [f for f in re.split(r"[-/.\s]+", text.strip()) if f]
    order = format or ("ymd" if fields and len(fields[0]) == 4 else "dmy"[: len(fields)] or "dmy")
    if order not in _DATE_FORMATS:
        raise ValueError(f"date format {order!r} is not one of {', '.join(_DATE_FORMATS)}")
    if len(fields) != len(order) or not all(f.isascii() and f.isdigit() for f in fields):
        raise ValueError(f"{text!r} does not read as a date in the format {order!r}")
    parts = dict(zip(order, fields, strict=True))
    if not 1 <= int(parts.get("m", 1)) <= 12 or not 1 <= int(parts.get("d", 1)) <= 31:
        raise ValueError(f"{text!r} has no month {parts.get('m')} or day {parts.get('d')}")
    if language == "english":
        return _english_date(parts, order), None
    if language in _CHINESE:
        return _chinese_date(parts), None
    said = " ".join(_cardinal(str(int(parts[key])), language) for key in order)
    return said, f"a date in {language} is read as its numbers ({text.strip()!r})"


def _english_date(parts: dict[str, str], order: str) -> str:
    month = english.MONTHS[int(parts["m"]) - 1] if "m" in parts else None
    day = num2words(int(parts["d"]), lang="en", to="ordinal") if "d" in parts else None
    year = num2words(int(parts["y"]), lang="en", to="year").replace(",", "") if "y" in parts else None
    if order.startswith("m") and day:  # American order is read as written: June fifth
        said = f"{month} {day}"
    elif day:
        said = f"the {day} of {month}" if month else f"the {day}"
    else:
        said = month or ""
    return " ".join(part for part in (said, year) if part)


def _chinese_date(parts: dict[str, str]) -> str:
    said = f"{chinese.spell(parts['y'])}年" if "y" in parts else ""
    said += f"{chinese.cardinal(str(int(parts['m'])))}月" if "m" in parts else ""
    return said + (f"{chinese.cardinal(str(int(parts['d'])))}日" if "d" in parts else "")


def _cardinal(value: str, language: str) -> str:
    if language == "english":
        return english.cardinal(value.replace(",", "."))
    if language in _CHINESE:
        return chinese.cardinal(value.replace(",", "."))
    if language in WORDS:
        words = WORDS[language]
        decimal = "," if words.decimal_comma else "."
        return other._cardinal(value.replace(",", decimal).replace(".", decimal), words)
    return value  # a language without rules: the model reads the digits


def _digit(ch: str, language: str) -> str:
    if language == "english":
        return english.DIGITS[int(ch)]
    if language in _CHINESE:
        return chinese.spell(ch)
    if language in WORDS:
        return num2words(int(ch), lang=WORDS[language].code)
    return ch
