"""Written announcement text -> the words an announcer says, per language.

English and Chinese have their own rule sets; the other model languages share one driven by a table of
words (other.py, words.py). A language without rules is returned as is. Full-width digits and Latin
letters (１２３, ＡＢ, common in Chinese and Japanese text) are read as their ASCII forms first.
"""

from __future__ import annotations

import re

from qwen3tts.text.normalize import chinese, english, other
from qwen3tts.text.normalize.scanner import URL

_CHINESE = ("chinese", "sichuan_dialect", "beijing_dialect")
_HALF_WIDTH = str.maketrans(
    {
        chr(code): chr(code - 0xFEE0)
        for code in [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B)]
    }
    | {"％": "%"}
)
# full-width : and . only between digits (elsewhere they are CJK punctuation and stay)
_DIGIT_PUNCTUATION = re.compile(r"(?<=[0-9])[：．](?=[0-9])")
_URL = re.compile(URL, re.ASCII)


def normalize(text: str, language: str) -> str:
    """`text` with numbers, times, prices, units, codes and abbreviations written as spoken words."""
    text = _DIGIT_PUNCTUATION.sub(lambda m: {"：": ":", "．": "."}[m.group(0)], text.translate(_HALF_WIDTH))
    if language == "english":
        return english.normalize(text)
    if language in _CHINESE:
        return chinese.normalize(text)
    return other.normalize(text, language)


def unread(spoken: str) -> list[str]:
    """The tokens of a normalised text that still hold ASCII digits (no rule read them), URLs aside.

    Digits of other scripts (٣, ²) are not listed: the rules leave those to the model on purpose.
    """
    tokens = []
    for token in spoken.split():
        if any("0" <= ch <= "9" for ch in token) and not _URL.search(token):
            tokens.append(token)
    return tokens
