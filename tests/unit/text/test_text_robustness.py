"""Hostile text never breaks prepare(): every input gets pieces the model can say, in every language."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen3tts.text import MODEL_LANGUAGES, prepare
from qwen3tts.text.ssml import SSMLError

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
    prepared = prepare(text, language, ssml=False)
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


MARKUP = st.sampled_from(
    [
        "<speak>", "</speak>", "<p>", "</p>", "<s>", "</s>", '<break time="300ms"/>', "<break/>",
        '<say-as interpret-as="characters">', '<say-as interpret-as="date">', "</say-as>",
        '<sub alias="x">', "</sub>", '<lang xml:lang="de">', "</lang>", '<prosody rate="fast">',
        "</prosody>", "<emphasis>", "</emphasis>", '<voice name="a">', "</voice>", '<audio src="gong">',
        "</audio>", "<foo>", "</foo>", "&amp;", "&lt;", "&x;", "<!DOCTYPE x>", "<?xml version='1.0'?>",
        "12:30", "B12", "2024-03-05", " ", "text ", "<", ">", '"',
    ]
)  # fmt: skip
DOCUMENTS = st.one_of(
    st.lists(MARKUP, max_size=40).map(lambda parts: "<speak>" + "".join(parts) + "</speak>"),
    st.lists(st.one_of(MARKUP, st.text(max_size=5)), max_size=40).map("".join),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, st.sampled_from(["english", "chinese", "german", "auto"]))
def test_any_document_read_as_ssml_prepares_or_is_one_ssml_error(document, language):
    try:
        prepared = prepare(document, language, ssml=True, chimes={"gong"})
    except SSMLError as error:
        assert str(error).startswith("SSML")
        return
    assert all(
        piece.normalized.strip() or piece.chime or piece.silence_before_ms or piece.silence_after_ms
        for piece in prepared.pieces
    )
    for piece in prepared.pieces:
        assert prepared.text[piece.start : piece.end] == piece.text or piece.text == ""
