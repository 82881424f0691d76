"""Written announcement text -> the words an announcer says, per language.

English and Chinese have their own rule sets; the other model languages share one driven by a table of
words (other.py). A language without rules (a dialect name maps to Chinese first) is returned as is.
"""

from __future__ import annotations

from qwen3tts.text.normalize import chinese, english, other

_CHINESE = ("chinese", "sichuan_dialect", "beijing_dialect")


def normalize(text: str, language: str) -> str:
    """`text` with numbers, times, prices, units, codes and abbreviations written as spoken words."""
    if language == "english":
        return english.normalize(text)
    if language in _CHINESE:
        return chinese.normalize(text)
    return other.normalize(text, language)
