"""prepare(): pieces keep the original slice beside what the model gets."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.text import Piece, prepare


def test_pieces_are_slices_of_the_text_with_their_offsets():
    text = "Please welcome Dr. Smith.  Gate B12 closes at 14:05."
    prepared = prepare(text, "en")
    assert [piece.text for piece in prepared.pieces] == [
        "Please welcome Dr. Smith.",
        "Gate B12 closes at 14:05.",
    ]
    for piece in prepared.pieces:
        assert text[piece.start : piece.end] == piece.text
    assert prepared.pieces[1] == Piece(
        "Gate B12 closes at 14:05.", "Gate B one two closes at fourteen oh five.", 27, 52
    )


def test_normalize_false_sends_the_text_as_typed():
    prepared = prepare("Gate B12 closes at 14:05.", "en", normalize=False)
    assert [piece.normalized for piece in prepared.pieces] == ["Gate B12 closes at 14:05."]


def test_text_with_nothing_to_say_has_no_pieces():
    assert prepare("   ", "en").pieces == []


def test_a_text_that_is_not_a_string_is_rejected():
    with pytest.raises(RequestError, match="text must be a string"):
        prepare(b"bytes", "en")


def test_the_same_text_always_reads_the_same_way():
    text = "The 14:05 to St. Albans costs £4.20 and leaves from platform 3."
    assert prepare(text, "auto") == prepare(text, "auto")
