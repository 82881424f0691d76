"""The bounds on an SSML document and the values its attributes may take.

The bounds keep a hostile document cheap to refuse (it fails at the first element past a bound) and
an announcement sane: no minute of silence, no rate the time-scale modification cannot render well.
"""

from __future__ import annotations

import re

MAX_DOCUMENT_CHARS = 20_000  # markup included; the spoken text is bounded by the caller's text limit
MAX_DEPTH = 32
MAX_ELEMENTS = 1_000
MAX_BREAKS = 100  # <break> and <audio> together
MAX_BREAK_MS = 10_000
MAX_SILENCE_MS = 60_000  # all breaks of one document
RATE_RANGE = (0.5, 2.0)  # the product of nested <prosody rate>

# W3C leaves the lengths to the processor; these follow common practice (medium = a sentence pause).
BREAK_STRENGTHS = {"none": 0, "x-weak": 125, "weak": 250, "medium": 500, "strong": 750, "x-strong": 1000}
EMPHASIS_LEVELS = ("strong", "moderate", "none", "reduced")
RATE_WORDS = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}

# Matched against stripped values; no leading \s*, which a search would retry from every space.
_TIME = re.compile(r"(\d{1,6}(?:\.\d{1,3})?) ?(ms|s)")
_PERCENT = re.compile(r"([+-]?)(\d{1,4}(?:\.\d{1,3})?)%")
_FACTOR = re.compile(r"\d{1,2}(?:\.\d{1,3})?")


def parse_time_ms(value: str) -> int | None:
    """'750ms' -> 750, '1.5s' -> 1500; None for anything else."""
    match = _TIME.fullmatch(value.strip())
    if match is None:
        return None
    number = float(match[1])
    return round(number if match[2] == "ms" else number * 1000)


def parse_rate(value: str) -> float | None:
    """A rate as a factor of the enclosing one: 'slow', '80%' (SSML 1.1), '+10%' / '-20%' (a relative
    change, SSML 1.0), '1.2' (a multiplier, SSML 1.0); None for anything else."""
    value = value.strip()
    if value in RATE_WORDS:
        return RATE_WORDS[value]
    percent = _PERCENT.fullmatch(value)
    if percent is not None:
        amount = float(percent[2]) / 100
        return {"+": 1 + amount, "-": 1 - amount}.get(percent[1], amount)
    return float(value) if _FACTOR.fullmatch(value) else None
