"""Language tags -> model names (text/languages.py), beyond tests/unit/text/test_text_languages.py:
malformed tags refused rather than guessed at, a model language the bundle lacks, and the ISO codes
the doors report back."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.text.languages import MODEL_LANGUAGES, iso_code, resolve_language

BUNDLE = ("chinese", "english", "german")


@pytest.mark.parametrize("tag", ["en-", "--", "e", "en-toolongsubtag", "en gb", "12"])
def test_a_malformed_tag_is_refused_not_guessed_at(tag):
    with pytest.raises(RequestError, match=f"unknown language '{tag}'"):
        resolve_language(tag, BUNDLE)


def test_a_model_language_missing_from_the_bundle_is_named_as_such():
    with pytest.raises(RequestError) as refused:
        resolve_language("Spanish", BUNDLE)
    assert (
        str(refused.value)
        == "language 'Spanish' is not in this bundle (known: auto, chinese, english, german)"
    )


def test_min_nan_and_wu_are_named_as_languages_the_model_does_not_speak():
    for tag, spoken in (("nan", "Min Nan"), ("wuu-CN", "Wu Chinese")):
        with pytest.raises(RequestError, match=f"\\({spoken}\\) is not spoken by this model"):
            resolve_language(tag, BUNDLE)


def test_surrounding_space_and_case_do_not_matter():
    assert resolve_language("  DE_at ", BUNDLE) == "german"
    assert resolve_language(" AUTO ", BUNDLE) == "auto"


def test_the_default_bundle_is_every_release_language():
    assert resolve_language("beijing_dialect") == "beijing_dialect"
    assert resolve_language("it-CH") == "italian"
    assert len(MODEL_LANGUAGES) == 12


@pytest.mark.parametrize(
    ("name", "code"),
    [("english", "en"), ("chinese", "zh"), ("sichuan_dialect", "zh"), ("beijing_dialect", "zh"),
     ("portuguese", "pt"), ("klingon", "en"), ("auto", "en")],
)  # fmt: skip
def test_every_model_language_has_an_iso_code_and_anything_else_is_english(name, code):
    assert iso_code(name) == code


def test_iso_code_round_trips_every_model_language_but_the_dialects():
    for name in MODEL_LANGUAGES:
        expected = "chinese" if name.endswith("_dialect") else name
        assert resolve_language(iso_code(name)) == expected
