"""Hostile text never breaks prepare(): every input gets pieces the model can say, in every language."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen3tts.text import MODEL_LANGUAGES, prepare

# Characters and fragments the rules react to, so generated text hits them often (plus any text at all).
FRAGMENTS = st.sampled_from(
    [
        *"0123456789" * 3,
        *" ,.:-/%€$£¥°+()\n。，年月日元号第次点",
        "km/h",
        "°C",
        "pm",
        " Dr. ",
        " St. ",
        "www.",
        "@",
        "B12",
        "ICE ",
        "٣",
        "²",
        "½",
        "12:30",
        "1,250.00",
        "2024-03-05",
    ]
)
HOSTILE = st.one_of(st.text(max_size=80), st.lists(FRAGMENTS, max_size=50).map("".join))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE, st.sampled_from(MODEL_LANGUAGES))
def test_any_text_in_any_language_prepares_without_error(text, language):
    prepared = prepare(text, language)
    assert all(piece.normalized.strip() for piece in prepared.pieces)
    assert "".join("".join(p.text.split()) for p in prepared.pieces) == "".join(text.split())


def test_a_number_too_long_to_say_is_read_digit_by_digit():
    number = "12345678901234567890"
    assert prepare(f"Reference {number}.", "en").pieces[0].normalized.count("zero") == 2
    assert (
        prepare(f"编号{number}。", "zh").pieces[0].normalized
        == "编号一二三四五六七八九零一二三四五六七八九零。"
    )


def test_digits_of_other_scripts_are_left_to_the_model():
    assert prepare("Platform ٣ please.", "en").pieces[0].normalized == "Platform ٣ please."
