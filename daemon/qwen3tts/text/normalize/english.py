"""English as a station or shop announcer says it; num2words says the numbers.

Ours are only the decisions an announcer makes: which digits are a time, a price, a code read digit by
digit (`Gate B12` -> "Gate B one two", `ICE 578` -> "ICE five seven eight"), a phone number; and the
few words for units, currencies and abbreviations.
"""

from __future__ import annotations

import re
from decimal import Decimal

from num2words import num2words

from qwen3tts.text.normalize.scanner import (
    MAX_CARDINAL_DIGITS,
    NUMBER,
    URL,
    Rule,
    digits,
    keep,
    rewrite,
    rule,
    scientific,
)

DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# symbol or code -> (one, many, one hundredth, many hundredths)
CURRENCIES = {
    "€": ("euro", "euros", "cent", "cents"),
    "EUR": ("euro", "euros", "cent", "cents"),
    "$": ("dollar", "dollars", "cent", "cents"),
    "USD": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "GBP": ("pound", "pounds", "penny", "pence"),
    "¥": ("yuan", "yuan", "fen", "fen"),
    "CNY": ("yuan", "yuan", "fen", "fen"),
    "JPY": ("yen", "yen", "sen", "sen"),
    "CHF": ("franc", "francs", "centime", "centimes"),
}
UNITS = {
    "km/h": ("kilometre per hour", "kilometres per hour"),
    "mph": ("mile per hour", "miles per hour"),
    "km": ("kilometre", "kilometres"),
    "m": ("metre", "metres"),
    "cm": ("centimetre", "centimetres"),
    "mm": ("millimetre", "millimetres"),
    "kg": ("kilogram", "kilograms"),
    "g": ("gram", "grams"),
    "l": ("litre", "litres"),
    "ml": ("millilitre", "millilitres"),
    "°C": ("degree Celsius", "degrees Celsius"),
    "°F": ("degree Fahrenheit", "degrees Fahrenheit"),
    "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"),
    "h": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "s": ("second", "seconds"),
    "sec": ("second", "seconds"),
}
ABBREVIATIONS = {
    "Mr.": "Mister",
    "Mrs.": "Missus",
    "Ms.": "Miz",
    "Prof.": "Professor",
    "approx.": "approximately",
    "e.g.": "for example",
    "i.e.": "that is",
    "etc.": "et cetera",
    "vs.": "versus",
    "Rd.": "Road",
    "Ave.": "Avenue",
    "Sq.": "Square",
    "Jr.": "Junior",
    "Sr.": "Senior",
    "Tel.": "telephone",
    "Dept.": "department",
    "incl.": "including",
    "excl.": "excluding",
    "&": "and",
}


def normalize(text: str) -> str:
    return rewrite(text, RULES)


def cardinal(number: str) -> str:
    """1,250.50 -> one thousand two hundred and fifty point five zero; no commas (they would be pauses).

    The digits after the point are read one by one, trailing zeros too (num2words would drop them).
    """
    whole, _, fraction = number.replace(",", "").partition(".")
    if len(whole) > MAX_CARDINAL_DIGITS or (len(whole) > 1 and whole.startswith("0") and not fraction):
        said = digits(whole, DIGITS)
    else:
        said = num2words(int(whole), lang="en").replace(",", "")
    return f"{said} point {digits(fraction, DIGITS)}" if fraction else said


def _scientific(m: re.Match[str]) -> str:
    minus = "minus " if m["sign"] in ("-", "−") else ""
    return f"{cardinal(m['mantissa'])} times ten to the power of {minus}{cardinal(m['exponent'])}"


def _time(m: re.Match[str]) -> str | None:
    hour, minute, half = int(m["h"]), m["m"], (m["ampm"] or "").replace(".", "").lower()
    if hour > 23 or (half and not 1 <= hour <= 12):
        return None
    if half:
        said = cardinal(str(hour)) if minute in (None, "00") else f"{cardinal(str(hour))} {_minutes(minute)}"
        return f"{said} {' '.join(half)}"
    if minute is None:
        return None
    lead = "oh " if m["h"].startswith("0") and hour > 0 else ""
    if minute == "00":
        return f"{lead}{cardinal(str(hour))} hundred"
    return f"{lead}{cardinal(str(hour))} {_minutes(minute)}"


def _minutes(minute: str) -> str:
    return f"oh {DIGITS[int(minute)]}" if minute.startswith("0") else cardinal(minute)


def _day_month(day: str, month_name: str) -> str:
    return f"the {num2words(int(day), lang='en', to='ordinal')} of {month_name}"


def _iso_date(m: re.Match[str]) -> str | None:
    month, day = int(m["mo"]), int(m["d"])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{_day_month(m['d'], MONTHS[month - 1])} {_year(m['y'])}"


def _year(year: str) -> str:
    return num2words(int(year), lang="en", to="year").replace(",", "")


def _date_dmy(m: re.Match[str]) -> str:
    said = _day_month(m["d"], m["mon"])
    return f"{said} {_year(m['y'])}" if m["y"] else said


def _date_mdy(m: re.Match[str]) -> str:
    said = f"{m['mon']} {num2words(int(m['d']), lang='en', to='ordinal')}"
    return f"{said}, {_year(m['y'])}" if m["y"] else said


def _money(m: re.Match[str]) -> str:
    symbol, amount = (m["cur"], m["amount"]) if m["cur"] else (m["cur2"], m["a2"])
    one, many, cent, cents = CURRENCIES[symbol]
    if m["scale"]:
        return f"{cardinal(amount)} {m['scale']} {many}"
    value = Decimal(amount.replace(",", ""))
    whole, hundredths = int(value), int((value - int(value)) * 100)
    said = [f"{cardinal(str(whole))} {one if whole == 1 else many}"] if whole or not hundredths else []
    if hundredths:
        said.append(f"{cardinal(str(hundredths))} {cent if hundredths == 1 else cents}")
    return " and ".join(said)


def _unit(m: re.Match[str]) -> str:
    one, many = UNITS[m["unit"]]
    sign = "minus " if m["sign"] else ""
    return f"{sign}{cardinal(m['n'])} {one if m['n'] == '1' else many}"


def _phone(m: re.Match[str]) -> str:
    groups = re.findall(r"\d+", m.group(0))
    said = ", ".join(digits(group, DIGITS) for group in groups)
    return f"plus {said}" if m.group(0).startswith("+") else said


def _code(m: re.Match[str]) -> str:
    return f"{m['letters']} {digits(m['num'], DIGITS)}{' ' + m['tail'] if m['tail'] else ''}"


def _range(m: re.Match[str]) -> str:
    said = f"{cardinal(m['a'])} to {cardinal(m['b'])}"
    return f"{said} {UNITS[m['unit']][1]}" if m["unit"] else said


def _ordinal(m: re.Match[str]) -> str | None:
    if len(m["n"]) > MAX_CARDINAL_DIGITS:
        return None
    return num2words(int(m["n"]), lang="en", to="ordinal").replace(",", "")


def _saint_or_street(m: re.Match[str]) -> str:
    """`St. Albans`, `Dr. Smith` (a name follows) versus `Baker St.`, `Mulholland Dr. is closed`."""
    before_name, after_name = {"St": ("Saint", "Street"), "Dr": ("Doctor", "Drive")}[m["abbr"]]
    following = m.string[m.end() :].lstrip()
    return before_name if following[:1].isupper() else after_name


_MON = "|".join(MONTHS)
_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_CUR = "|".join(re.escape(c) for c in CURRENCIES if not c.isalpha())
_CUR_CODE = "|".join(c for c in CURRENCIES if c.isalpha())
_ABBR = "|".join(re.escape(a) for a in ABBREVIATIONS)

RULES: tuple[Rule, ...] = (
    rule("url", URL, keep),
    rule("scientific", scientific(NUMBER), lambda m: _scientific(m)),
    rule("iso_date", r"\b(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})\b", _iso_date),
    # day first, as in Britain and most of the world: 05/03/2025 is the fifth of March
    rule("slash_date", r"\b(?P<d>\d{1,2})/(?P<mo>\d{1,2})/(?P<y>\d{4})\b", _iso_date),
    rule(
        "phone",
        r"(?<![\w.,])(?:\+\d{1,3}[ -]?(?:\(0\))?\d+(?:[ -]\d+)+"
        r"|0\d{2,4}[ -]\d{3,}(?:[ -]\d+)*|\d{3}-\d{4})\b",
        _phone,
    ),
    rule(
        "time",
        r"\b(?P<h>\d{1,2})(?::(?P<m>[0-5]\d))?(?:\s?(?P<ampm>[ap]\.m\.|[ap]m\b))?(?![\d:])",
        _time,
        re.IGNORECASE,
    ),
    rule("date_dmy", rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?P<mon>{_MON})(?: (?P<y>\d{{4}}))?\b", _date_dmy),
    rule(
        "year",
        r"(?i:\b(?:in|since|until|from|of|year|summer|winter|spring|autumn) )"
        r"(?P<y>1[89]\d\d|20\d\d)\b(?![-/.,]\d)",
        lambda m: m.group(0)[: m.start("y") - m.start()] + _year(m["y"]),
    ),
    rule("number_abbreviation", r"\bNo\.(?= ?\d{1,2}\b)", lambda m: "number"),
    rule(
        "date_mdy", rf"\b(?P<mon>{_MON}) (?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:, (?P<y>\d{{4}}))?\b", _date_mdy
    ),
    rule(
        "money",
        rf"(?:(?P<cur>{_CUR})\s?(?P<amount>{NUMBER})|(?P<a2>{NUMBER}) ?(?P<cur2>{_CUR_CODE}|€)\b)"
        r"(?: ?(?P<scale>million|billion))?",
        _money,
    ),
    rule("percent", rf"(?P<n>{NUMBER}) ?%", lambda m: f"{cardinal(m['n'])} percent"),
    rule("unit", rf"(?:(?<![\w.])(?P<sign>[-−]))?(?P<n>{NUMBER}) ?(?P<unit>{_UNIT})(?![\w/])", _unit),
    rule("code", r"\b(?P<letters>[A-Z]{1,3})(?P<num>\d{1,5})(?P<tail>[A-Z]?)\b", _code),
    rule("spaced_code", r"\b(?P<letters>[A-Z]{2,4}) (?P<num>\d{2,5})(?P<tail>)\b", _code),
    rule(
        "service_no",
        r"(?i:\b(?P<letters>flight|train|bus|service|route|no\.|number)) (?P<num>\d{3,})(?P<tail>)\b",
        lambda m: f"{'number' if m['letters'].lower() == 'no.' else m['letters']} {digits(m['num'], DIGITS)}",
    ),
    rule("ordinal", r"\b(?P<n>\d+)(?:st|nd|rd|th)\b", _ordinal),
    rule("range", rf"\b(?P<a>{NUMBER}) ?[-–] ?(?P<b>{NUMBER})\b(?: ?(?P<unit>{_UNIT})(?![\w/]))?", _range),
    rule(
        "number",
        rf"(?:(?<![\w.])(?P<sign>[-−])(?=\d))?\b(?:{NUMBER})\b",  # a minus only where no word precedes
        lambda m: ("minus " if m["sign"] else "") + cardinal(m.group(0).lstrip("-−")),
    ),
    rule("st_dr", r"\b(?P<abbr>St|Dr)\.(?=\s|$)", _saint_or_street),
    rule("abbreviation", rf"(?<!\w)(?:{_ABBR})(?!\w)", lambda m: ABBREVIATIONS[m.group(0)]),
)
