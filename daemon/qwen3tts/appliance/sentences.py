"""Split announcement text into sentences, so the first one plays while the rest is synthesised.

A split happens after sentence-ending punctuation (Latin and CJK) or a line break. Fragments too short
to say well on their own ("Hi." "OK.") are joined to the next one, and a sentence longer than
`max_chars` is split again at a comma or a space, because one very long request delays the first audio.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；])|\n+")
_SOFT_BREAK = re.compile(r"(?<=[,;:，、：])\s*")
MIN_CHARS = 12
MAX_CHARS = 240


def split_sentences(text: str, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS) -> list[str]:
    """Sentences of `text` in order; joining them with spaces gives the text back (modulo whitespace)."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    merged: list[str] = []
    carry = ""
    for piece in pieces:
        carry = _join(carry, piece) if carry else piece
        if _weight(carry) >= min_chars:
            merged.append(carry)
            carry = ""
    if carry:
        if merged and _weight(carry) < min_chars:
            merged[-1] = _join(merged[-1], carry)
        else:
            merged.append(carry)
    return [part for sentence in merged for part in _limit(sentence, max_chars)]


def _weight(text: str) -> int:
    """Length in Latin-character equivalents: a CJK character carries about two letters' worth."""
    return sum(2 if ord(ch) > 0x2E80 else 1 for ch in text)


def _join(left: str, right: str) -> str:
    """CJK text has no spaces between sentences; Latin text does."""
    return left + right if left and ord(left[-1]) > 0x2E80 else f"{left} {right}"


def _limit(sentence: str, max_chars: int) -> list[str]:
    if len(sentence) <= max_chars:
        return [sentence]
    parts, current = [], ""
    for piece in _SOFT_BREAK.split(sentence) if _SOFT_BREAK.search(sentence) else sentence.split(" "):
        candidate = f"{current} {piece}".strip() if current else piece
        if len(candidate) > max_chars and current:
            parts.append(current)
            current = piece
        else:
            current = candidate
    if current:
        parts.append(current)
    # a piece with no break at all (e.g. 300 CJK characters): hard cut
    return [chunk[i : i + max_chars] for chunk in parts for i in range(0, len(chunk), max_chars)]
