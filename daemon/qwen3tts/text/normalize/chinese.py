"""Chinese as a station or shop announcer says it; cn2an says the numbers.

Ours are the announcer's decisions: times (十四点零五分), prices in 元角分, years and codes digit by digit
(二零二四年, G一二三次), 两 before a measure word, 零下 for temperatures below zero, and the unit words.
"""

from __future__ import annotations

import re
from decimal import Decimal

import cn2an

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

CURRENCIES = {"¥": "元", "￥": "元", "€": "欧元", "$": "美元", "£": "英镑", "HK$": "港币"}
UNITS = {
    "km/h": "公里每小时",
    "km": "公里",
    "kg": "公斤",
    "cm": "厘米",
    "mm": "毫米",
    "ml": "毫升",
    "mL": "毫升",
    "m": "米",
    "g": "克",
    "l": "升",
    "L": "升",
    "°C": "摄氏度",
    "℃": "摄氏度",
    "min": "分钟",
    "h": "小时",
}
# 2 before these reads 两 (两位旅客, 两个小时), never 二.
MEASURE_WORDS = "个位张件名天周辆节趟次台部杯条把间座只瓶份套种站小时分钟公里公斤米层"


def normalize(text: str) -> str:
    return rewrite(text, RULES)


def cardinal(number: str) -> str:
    value = number.replace(",", "")
    whole, _, fraction = value.partition(".")
    if len(whole) > 1 and whole.startswith("0") and not fraction:
        return spell(value)
    if len(whole) > MAX_CARDINAL_DIGITS or len(fraction) > MAX_CARDINAL_DIGITS:
        return spell(whole) + (f"点{spell(fraction)}" if fraction else "")
    return cn2an.an2cn(value, "low")


def spell(number: str) -> str:
    """Digit by digit: years, train and flight numbers."""
    return cn2an.an2cn(re.sub(r"\D", "", number), "direct")


def spell_phone(number: str) -> str:
    """Phone numbers are read digit by digit with 幺 for 1, so it is not heard as 七."""
    return spell(number).replace("一", "幺")


def _scientific(m: re.Match[str]) -> str:
    minus = "负" if m["sign"] in ("-", "−") else ""
    return f"{cardinal(m['mantissa'])}乘以十的{minus}{cardinal(m['exponent'])}次方"


def _time(m: re.Match[str]) -> str | None:
    hour, minute = int(m["h"]), int(m["m"])
    if hour > 24:
        return None
    said = "两点" if hour == 2 else f"{cardinal(str(hour))}点"  # 两点, never 二点
    if minute == 0:
        return said
    return f"{said}{'零' if minute < 10 else ''}{cardinal(str(minute))}分"


def _iso_date(m: re.Match[str]) -> str | None:
    month, day = int(m["mo"]), int(m["d"])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{spell(m['y'])}年{cardinal(str(month))}月{cardinal(str(day))}日"


def _money(m: re.Match[str]) -> str:
    amount = (m["amount"] or m["a2"]).replace(",", "")
    name = CURRENCIES.get(m["cur"] or "¥", "元")
    if name != "元":
        return f"{cardinal(_trim_zeros(amount))}{name}"
    value = Decimal(amount)
    whole, jiao, fen = int(value), int(value * 10) % 10, int(value * 100) % 10
    said = f"{cardinal(str(whole))}元" if whole or not (jiao or fen) else ""
    if jiao:
        said += f"{cardinal(str(jiao))}角"
    if fen:
        said += f"{'零' if said and not jiao else ''}{cardinal(str(fen))}分"
    return said


def _trim_zeros(amount: str) -> str:
    return amount.rstrip("0").rstrip(".") if "." in amount else amount


def _unit(m: re.Match[str]) -> str:
    word = UNITS[m["unit"]]
    if m["sign"]:
        return f"{'零下' if word == '摄氏度' else '负'}{cardinal(m['n'])}{word}"
    return f"{cardinal(m['n'])}{word}"


def _phone(m: re.Match[str]) -> str:
    groups = re.findall(r"\d+", m.group(0))
    said = "，".join(spell_phone(group) for group in groups)
    return f"加{said}" if m.group(0).startswith("+") else said


def _number(m: re.Match[str]) -> str:
    sign = "负" if m["sign"] else ""
    return sign + cardinal(m["n"])


_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_CUR = "|".join(re.escape(c) for c in sorted(CURRENCIES, key=len, reverse=True))

RULES: tuple[Rule, ...] = (
    rule("url", URL, keep),
    rule("scientific", scientific(NUMBER), lambda m: _scientific(m)),
    rule("iso_date", r"(?<!\d)(?P<y>\d{4})[-/.](?P<mo>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)", _iso_date),
    rule("year", r"(?<!\d)(?P<y>\d{4})(?=年)", lambda m: spell(m["y"])),
    rule(
        "phone",
        r"(?<![\d.])(?:\+\d{1,3}[ -]?\d+(?:[ -]\d+)*|0\d{2,3}-\d{7,8}|400-\d{3}-\d{4}|1[3-9]\d{9}"
        r"|(?<=拨打)\d{3,}|(?<=电话)\d{3,})(?!\d)",
        _phone,
    ),
    rule("time", r"(?<!\d)(?P<h>\d{1,2}):(?P<m>[0-5]\d)(?!\d)", _time),
    rule(
        "money",
        rf"(?:(?P<cur>{_CUR}) ?(?P<amount>{NUMBER}))|(?P<a2>{NUMBER}) ?元",
        _money,
    ),
    rule("percent", rf"(?P<n>{NUMBER}) ?[%％]", lambda m: f"百分之{cardinal(m['n'])}"),
    rule(
        "unit", rf"(?:(?<![A-Za-z0-9.])(?P<sign>[-−]))?(?P<n>{NUMBER}) ?(?P<unit>{_UNIT})(?![A-Za-z/])", _unit
    ),
    rule(
        "fraction",
        r"(?<!\d)(?P<a>\d+)/(?P<b>\d+)(?!\d)",
        lambda m: f"{cardinal(m['b'])}分之{cardinal(m['a'])}",
    ),
    rule(
        "code",
        r"(?<![A-Za-z])(?P<letters>[A-Z]{1,3})(?P<num>\d{1,5})(?!\d)",
        lambda m: m["letters"] + spell(m["num"]),
    ),
    rule(
        "range",
        rf"(?P<a>{NUMBER}) ?[-~～至] ?(?P<b>{NUMBER})",
        lambda m: f"{cardinal(m['a'])}到{cardinal(m['b'])}",
    ),
    rule("two", rf"(?<![\d第.])2(?![\d.])(?=[{MEASURE_WORDS}])", lambda m: "两"),
    rule("number", rf"(?:(?<![A-Za-z0-9.])(?P<sign>[-−])(?=\d))?(?P<n>{NUMBER})", _number),
)
