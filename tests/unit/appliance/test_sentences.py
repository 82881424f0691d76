"""Announcements are split into sentences so the first one can play while the rest is synthesised."""

from qwen3tts.appliance.sentences import split_sentences


def test_latin_text_splits_after_sentence_punctuation_and_keeps_it():
    assert split_sentences(
        "The train to Berlin leaves now. Please mind the gap! Is that all? Yes, it is."
    ) == [
        "The train to Berlin leaves now.",
        "Please mind the gap!",
        "Is that all? Yes, it is.",
    ]


def test_short_fragments_join_the_next_sentence():
    assert split_sentences("Hello. The store closes in fifteen minutes.") == [
        "Hello. The store closes in fifteen minutes."
    ]


def test_cjk_text_splits_after_full_width_punctuation_without_adding_spaces():
    assert split_sentences("欢迎光临本店。请注意脚下安全！谢谢。") == [
        "欢迎光临本店。",
        "请注意脚下安全！谢谢。",
    ]


def test_a_very_long_sentence_is_cut_at_commas_within_the_limit():
    text = ", ".join(f"item number {i}" for i in range(40)) + "."
    parts = split_sentences(text, max_chars=80)
    assert all(len(p) <= 80 for p in parts) and len(parts) > 1
    assert " ".join(parts).replace(" ", "") == text.replace(" ", "")


def test_line_breaks_end_sentences_and_blank_text_gives_nothing():
    assert split_sentences("First line of the notice\nSecond line of the notice") == [
        "First line of the notice",
        "Second line of the notice",
    ]
    assert split_sentences("   \n ") == []
