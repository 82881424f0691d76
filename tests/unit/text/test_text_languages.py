"""Language tags -> the model's language names; auto detection for the normaliser."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.text import detect_language, prepare, resolve_language

BUNDLE = ("chinese", "english", "german", "french", "japanese", "korean", "russian", "sichuan_dialect")


@pytest.mark.parametrize(
    ("tag", "name"),
    [
        ("english", "english"),
        ("English", "english"),
        ("en", "english"),
        ("en-GB", "english"),
        ("en_US", "english"),
        ("eng", "english"),
        ("zh", "chinese"),
        ("zh-CN", "chinese"),
        ("zh-Hans-CN", "chinese"),
        ("de-DE", "german"),
        ("fr-CA", "french"),
        ("ja-JP", "japanese"),
        ("ko", "korean"),
        ("sichuan_dialect", "sichuan_dialect"),
        ("auto", "auto"),
        ("", "auto"),
        (None, "auto"),
    ],
)
def test_model_names_iso_and_bcp47_tags_resolve_to_a_bundle_language(tag, name):
    assert resolve_language(tag, BUNDLE) == name


@pytest.mark.parametrize(
    ("tag", "reason"),
    [
        ("yue", "Cantonese) is not spoken by this model"),
        ("zh-HK", "Cantonese) is not spoken by this model"),
        ("es", "(spanish) is not in this bundle"),
        ("klingon", "unknown language 'klingon'"),
        ("xx-YY", "unknown language 'xx-YY'"),
    ],
)
def test_a_tag_the_bundle_cannot_speak_is_rejected_with_the_reason(tag, reason):
    with pytest.raises(RequestError) as error:
        resolve_language(tag, BUNDLE)
    assert reason in str(error.value)
    assert "known: auto, chinese, english" in str(error.value)


def test_a_non_string_language_is_rejected():
    with pytest.raises(RequestError, match="must be a string"):
        resolve_language(3, BUNDLE)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("各位旅客请注意，列车即将进站。", "chinese"),
        ("まもなく、3番線に電車が参ります。", "japanese"),
        ("3번 승강장에 열차가 들어오고 있습니다.", "korean"),
        ("Поезд отправляется с третьего пути.", "russian"),
        ("The train to Cambridge leaves from platform four.", "english"),
        ("Der Zug nach München fährt heute von Gleis drei.", "german"),
        ("Le train à destination de Paris partira du quai trois.", "french"),
        ("请前往Gate B12登机口登机。", "chinese"),
    ],
)
def test_auto_detects_the_language_among_the_bundles(text, language):
    assert detect_language(text, BUNDLE) == language


def test_detection_never_picks_a_language_outside_the_bundle():
    assert (
        detect_language("El tren con destino a Madrid sale del andén dos.", ("english", "chinese"))
        == "english"
    )
    assert detect_language("まもなく電車が参ります。", ("english", "chinese")) == "chinese"


def test_auto_keeps_auto_for_the_model_but_normalises_in_the_detected_language():
    prepared = prepare("开往北京的G123次列车将于14:05发车。", "auto", supported=BUNDLE)
    assert prepared.language == "auto"
    assert prepared.detected == "chinese"
    assert prepared.pieces[0].normalized == "开往北京的G一二三次列车将于十四点零五分发车。"


def test_a_named_language_is_sent_to_the_model_and_used_for_normalising():
    prepared = prepare("Abfahrt um 14:05 Uhr.", "de-DE", supported=BUNDLE)
    assert (prepared.language, prepared.detected) == ("german", "german")
    assert prepared.pieces[0].normalized == "Abfahrt um vierzehn Uhr fünf."
