"""The corpus of announcements: every sentence reads as an announcer would say it.

tests/fixtures/text_corpus.yaml holds hand-written expectations (not the library's output). Entries
marked `gap` are known differences and must still fail, so a fix shows up as an unexpected pass.
"""

import re
import unicodedata
from pathlib import Path

import pytest
import yaml

from qwen3tts.text import prepare

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "text_corpus.yaml"
ENTRIES = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
CJK = ("chinese", "japanese")


def comparable(text: str, language: str) -> str:
    """Lower case, hyphens as spaces, no punctuation; CJK without spaces."""
    text = text.lower().replace("-", " ")
    text = "".join(" " if unicodedata.category(ch).startswith("P") and ch not in "@'" else ch for ch in text)
    if language in CJK:
        return re.sub(r"\s+", "", text)
    return " ".join(text.split())


def cases():
    for language, entries in ENTRIES.items():
        for entry in entries:
            marks = [pytest.mark.xfail(reason=entry["gap"], strict=True)] if "gap" in entry else []
            yield pytest.param(
                language, entry["text"], entry["said"], marks=marks, id=f"{language}:{entry['text']}"
            )


def test_the_corpus_is_big_enough():
    assert len(ENTRIES["english"]) + len(ENTRIES["chinese"]) >= 100
    others = ("german", "french", "spanish", "italian", "portuguese", "russian", "japanese", "korean")
    assert all(len(ENTRIES[language]) >= 2 for language in others)


@pytest.mark.parametrize(("language", "text", "said"), list(cases()))
def test_an_announcement_reads_as_an_announcer_says_it(language, text, said):
    prepared = prepare(text, language=language)
    spoken = " ".join(piece.normalized for piece in prepared.pieces)
    assert comparable(spoken, language) == comparable(said, language)
