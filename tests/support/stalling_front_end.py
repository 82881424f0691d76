"""What a guarded text front end's workers run in tests (text/guard.py `target`): the real `prepare`,
after a pattern that backtracks catastrophically in Python's `re` (issue 27's lexicon entry): on a run of
word characters that does not end the text it holds the interpreter lock for days, a real stall."""

from __future__ import annotations

import re

from qwen3tts.text import MODEL_LANGUAGES, prepare

CATASTROPHIC = re.compile(r"(\w+\s?)+$")
STALLING_TEXT = "a" * 40 + "!"


def prepare_after_backtracking(
    text, language=None, normalize=True, lexicon=None, supported=MODEL_LANGUAGES, **marks
):
    CATASTROPHIC.search(text)
    return prepare(text, language, normalize, lexicon, supported, **marks)
