"""The normaliser's reported misreadings are fixed, and what it cannot read well is said in warnings."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.text import prepare
from qwen3tts.text.prepare import MAX_WARNINGS
from qwen3tts.text.splitter import MAX_WEIGHT, weight


@pytest.mark.parametrize(
    ("language", "text", "said"),
    [
        ("en", "1E-999 here.", "one times ten to the power of minus nine hundred and ninety-nine here."),
        ("en", "About 6.02e23.", "About six point zero two times ten to the power of twenty-three."),
        ("zh", "数值1E-999。", "数值一乘以十的负九百九十九次方。"),
        ("de", "Wert 1E-3 bitte.", "Wert eins mal zehn hoch minus drei bitte."),
    ],
)
def test_scientific_notation_is_read_as_a_power_of_ten(language, text, said):
    assert prepare(text, language).pieces[0].normalized == said


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Es kostet 0.555 Euro.", "Es kostet null Euro fünfundfünfzig."),
        ("Der Wert ist 0.555 heute.", "Der Wert ist null Komma fünf fünf fünf heute."),
        ("Es sind 12.5 Grad.", "Es sind zwölf Komma fünf Grad."),
        ("Es sind 1.250 Leute.", "Es sind eintausendzweihundertfünfzig Leute."),  # thousands stay
        ("Es sind 12,5 Grad.", "Es sind zwölf Komma fünf Grad."),
    ],
)
def test_german_reads_a_point_that_groups_no_thousands_as_a_decimal_point(text, said):
    assert prepare(text, "de").pieces[0].normalized == said


def test_a_2000_digit_price_is_cut_into_pieces_no_heavier_than_the_limit_with_a_warning():
    prepared = prepare("£" + "9" * 1999, "en")
    assert len(prepared.pieces) > 10
    assert all(weight(piece.normalized) <= MAX_WEIGHT for piece in prepared.pieces)
    assert " ".join(p.normalized for p in prepared.pieces).split().count("nine") == 1999
    assert any("cut into" in warning for warning in prepared.warnings)
    assert prepared.pieces[0].text.startswith("£999") and all(p.text == "" for p in prepared.pieces[1:])


def test_an_ordinary_sentence_has_no_warnings():
    prepared = prepare("The 14:05 to St. Albans costs £4.20 and leaves from platform 3.", "en")
    assert prepared.warnings == ()


def test_digits_no_rule_reads_are_named_in_a_warning():
    prepared = prepare("열차는 14:05에 출발합니다.", "ko")  # Korean times stay as written (native numbers)
    assert prepared.pieces[0].normalized.startswith("열차는 14:05")
    assert prepared.warnings == ("left as written (no reading for it): '14:05에'",)
    assert prepare("See www.example.com/a1 now.", "en").warnings == ()  # URLs keep their digits


def test_warnings_are_bounded():
    prepared = prepare(" ".join(f"{i}:{i}x" for i in range(300)), "ko")
    assert len(prepared.warnings) == MAX_WARNINGS
    assert prepared.warnings[-1].startswith("and ") and "more warnings" in prepared.warnings[-1]


def test_no_warnings_when_normalisation_is_off():
    assert prepare("열차는 14:05에 출발합니다.", "ko", normalize=False).warnings == ()


@pytest.mark.parametrize("text", ["a \ud800 b", "\udfff", "ok \udc80"])
def test_a_lone_surrogate_is_a_request_error_with_its_offset(text):
    with pytest.raises(RequestError, match="lone surrogate") as error:
        prepare(text, "en")
    assert f"offset {text.index(next(c for c in text if 0xD800 <= ord(c) <= 0xDFFF))}" in str(error.value)
