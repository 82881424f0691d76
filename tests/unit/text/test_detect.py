"""Which bundle language a text is written in (text/detect.py), beyond the plain detections of
tests/unit/text/test_text_languages.py: the fallbacks when the text has no letters, the script's
language is missing from the bundle or the bundle has one Latin language."""

import pytest

from qwen3tts.text.detect import detect_language


@pytest.mark.parametrize("text", ["", "12:45 — 3/4", "!!!", "🙂🙂"])
def test_text_without_letters_falls_back_to_english(text):
    assert detect_language(text, ("chinese", "english", "german")) == "english"


def test_without_english_the_fallback_is_the_bundles_first_language():
    assert detect_language("12:45", ("German", "french")) == "german"
    assert detect_language("Поезд отправляется.", ("chinese", "japanese")) == "chinese"


def test_an_empty_bundle_falls_back_to_english():
    assert detect_language("Der Zug fährt ab.", ()) == "english"


def test_a_bundle_with_one_latin_language_takes_any_latin_text_as_that_one():
    assert detect_language("Le train partira du quai trois.", ("chinese", "german")) == "german"


def test_hangul_and_kana_win_over_the_han_characters_they_are_mixed_with():
    assert detect_language("서울역 (서울驛) 에 도착합니다", ("chinese", "korean", "english")) == "korean"
    assert detect_language("東京駅に到着します", ("chinese", "japanese", "english")) == "japanese"


def test_kana_without_japanese_in_the_bundle_is_read_as_chinese():
    assert detect_language("東京駅に到着します", ("english", "chinese")) == "chinese"


def test_a_few_latin_letters_in_chinese_text_leave_it_chinese():
    assert detect_language("请到B12号登机口", ("chinese", "english")) == "chinese"


def test_latin_text_is_told_apart_among_the_bundles_latin_languages():
    bundle = ("english", "spanish", "italian", "portuguese")
    assert detect_language("El tren con destino a Madrid sale del andén dos.", bundle) == "spanish"
    assert detect_language("Il treno per Roma parte dal binario due.", bundle) == "italian"
