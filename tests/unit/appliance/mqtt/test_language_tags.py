"""Language tags at the door: model names and ISO 639-1 / BCP 47 tags (issue 13)."""

from __future__ import annotations

import pytest
from mqtt_door import MqttDoor, only_event, policy_for

from qwen3tts.errors import RequestError
from qwen3tts.text import resolve_language

LANGUAGES = ("chinese", "english", "german", "japanese", "french", "spanish")


@pytest.fixture
def door(tmp_path):
    return MqttDoor(tmp_path, policy=policy_for(("ryan",), LANGUAGES))


@pytest.mark.parametrize(
    ("tag", "name"),
    [
        ("en", "english"),
        ("en-US", "english"),
        ("en_GB", "english"),
        ("EN-us", "english"),
        ("zh", "chinese"),
        ("zh-CN", "chinese"),
        ("zh-Hans-CN", "chinese"),
        ("ja", "japanese"),
        ("ja-JP", "japanese"),
        ("de-DE", "german"),
        ("de-AT", "german"),
        ("fr-CA", "french"),
        ("es-419", "spanish"),
        ("English", "english"),
        ("german", "german"),
    ],
)
def test_tags_and_model_names_resolve_to_the_bundles_language(door, tag, name):
    event = only_event(door.send(f'{{"text": "hi", "lang": "{tag}"}}'))
    assert event.event == "queued", event.reason
    assert door.accepted()[0].lang == name
    assert resolve_language(tag, LANGUAGES) == name


def test_auto_stays_auto(door):
    door.send('{"text": "hi", "lang": "auto"}')
    assert door.accepted()[0].lang == "auto"


@pytest.mark.parametrize("tag", ["ko", "ko-KR", "klingon", "xx-YY", "en-", "--", "tlh"])
def test_languages_the_bundle_cannot_speak_are_rejected_naming_the_tag(door, tag):
    event = only_event(door.send(f'{{"text": "hi", "id": "l1", "lang": "{tag}"}}'))
    assert (event.event, event.id) == ("rejected", "l1")
    assert tag in event.reason and door.accepted() == []
    with pytest.raises(RequestError):
        resolve_language(tag, LANGUAGES)


def test_hermes_lang_tags_are_accepted_too(door):
    door.send('{"text": "hallo", "lang": "de-DE", "siteId": "default"}', "hermes/tts/say")
    assert door.accepted()[0].lang == "german"
