"""Splitting never changes the text, keeps abbreviations and numbers whole, and bounds piece length."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3tts.text.splitter import split_spans, weight


def pieces_of(text, language="english", **limits):
    return [text[start:end] for start, end in split_spans(text, language, **limits)]


def squeeze(text):
    return "".join(text.split())


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from(["english", "chinese", "german", "japanese", "russian"]))
def test_joining_the_pieces_gives_the_input_back_up_to_whitespace(text, language):
    spans = split_spans(text, language, max_weight=40)
    assert squeeze("".join(text[a:b] for a, b in spans)) == squeeze(text)
    for (a, b), (c, _) in itertools.pairwise(spans):
        assert a < b <= c  # in order, never overlapping
    for a, b in spans:
        assert text[a:b] == text[a:b].strip() != ""


# Latin tokens an announcement is made of: words, numbers, times, prices, codes, URLs.
TOKENS = st.one_of(
    st.from_regex(r"[A-Za-z]{1,12}", fullmatch=True),
    st.from_regex(r"[0-9]{1,3}(,[0-9]{3}){0,2}(\.[0-9][0-9])?", fullmatch=True),
    st.from_regex(r"([01][0-9]|2[0-3]):[0-5][0-9]", fullmatch=True),
    st.from_regex(r"[€$£][0-9]{1,4}\.[0-9][0-9]", fullmatch=True),
    st.from_regex(r"[A-Z]{1,3}[0-9]{1,4}", fullmatch=True),
    st.from_regex(r"https://www\.[a-z]{3,10}\.com/[a-z]{1,8}", fullmatch=True),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=80), st.integers(min_value=16, max_value=80))
def test_an_over_long_sentence_is_cut_only_between_tokens(tokens, max_weight):
    text = " ".join(tokens)
    pieces = pieces_of(text, max_weight=max_weight)
    assert [token for piece in pieces for token in piece.split(" ")] == tokens
    for piece in pieces:  # a piece is only over the limit when it is one token that cannot be cut
        assert weight(piece) <= max_weight or " " not in piece


def test_titles_and_saints_do_not_end_a_sentence():
    text = "Please welcome Dr. Smith to the stage. The train to St. Albans leaves from platform 4."
    assert pieces_of(text) == [
        "Please welcome Dr. Smith to the stage.",
        "The train to St. Albans leaves from platform 4.",
    ]


def test_abbreviations_of_other_languages_stay_inside_the_sentence():
    assert len(pieces_of("Herr Dr. Müller wird zur Information gebeten. Danke schön.", "german")) == 2
    assert pieces_of("Gracias por su visita. Sr. García, acuda a la caja.", "spanish")[1].startswith(
        "Sr. García"
    )


def test_chinese_sentences_split_at_chinese_full_stops():
    text = "各位旅客请注意。开往北京的G123次列车即将进站！请勿拥挤，谢谢。"
    assert pieces_of(text, "chinese") == [
        "各位旅客请注意。",
        "开往北京的G123次列车即将进站！",
        "请勿拥挤，谢谢。",
    ]


def test_the_regression_of_the_old_splitter_numbers_and_times_stay_whole():
    clause = "the balance of 1,250.00 at 14:05 is due"
    text = "Please note that " + " and ".join([clause] * 12) + "."
    pieces = pieces_of(text)
    assert len(pieces) > 1
    assert all(weight(piece) <= 240 for piece in pieces)
    assert " ".join(pieces) == text
    assert not any(piece.endswith(("14:", "1,")) or piece.startswith(("05", "250")) for piece in pieces)


def test_a_long_sentence_is_cut_after_a_clause_rather_than_between_words():
    text = ", ".join(["passengers for the coastal line should change here"] * 8) + "."
    pieces = pieces_of(text, max_weight=120)
    assert len(pieces) > 1
    assert all(piece.endswith((",", ".")) for piece in pieces)


def test_a_number_is_kept_with_its_unit_when_a_cut_is_needed():
    text = "word " * 10 + "12 km"
    pieces = pieces_of(text.strip(), max_weight=48)
    assert any(piece.endswith("12 km") for piece in pieces)


def test_chinese_without_punctuation_is_cut_between_characters_within_the_limit():
    text = "请" * 300
    pieces = pieces_of(text, "chinese", max_weight=100)
    assert "".join(pieces) == text
    assert all(weight(piece) <= 100 for piece in pieces)


def test_short_fragments_join_the_next_sentence():
    assert pieces_of("Hi. The shop closes in ten minutes.") == ["Hi. The shop closes in ten minutes."]
    assert pieces_of("The shop closes in ten minutes. Bye.") == ["The shop closes in ten minutes. Bye."]


def test_empty_and_blank_text_has_no_pieces():
    assert pieces_of("") == []
    assert pieces_of(" \n\t ") == []


def test_a_boundary_the_library_puts_inside_a_token_is_not_taken():
    # sentencex ends a sentence after "£0." when an Arabic-Indic digit follows, with no space between
    assert pieces_of("Please pay £0.٠0 at the till now, thank you.") == [
        "Please pay £0.٠0 at the till now, thank you."
    ]


def test_a_token_longer_than_the_limit_stands_alone_and_whole():
    url = "https://www.example.com/" + "a" * 40
    assert pieces_of(f"See {url} for the timetable", max_weight=16) == ["See", url, "for the", "timetable"]
