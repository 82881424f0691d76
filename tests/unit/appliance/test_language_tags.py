"""Language tags at the front door: model names and ISO 639-1 / BCP 47 tags (issue 13)."""

from __future__ import annotations

import pytest

from qwen3tts.appliance.mqtt.intake import AnnouncementIntake, AnnouncementPolicy
from qwen3tts.appliance.mqtt.messages import Inbound, MqttMeta, Topics
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.errors import RequestError
from qwen3tts.text import resolve_language

BASE = "qwen3tts/hall"
LANGUAGES = ("chinese", "english", "german", "japanese", "french", "spanish")


@pytest.fixture
def intake(tmp_path):
    return AnnouncementIntake(
        AnnouncementQueue(tmp_path / "spool"),
        AnnouncementPolicy(languages=LANGUAGES),
        Topics(BASE, hermes=True),
        ack=lambda token: None,
    )


def say(intake, body: str, topic: str = f"{BASE}/say"):
    return intake.handle(Inbound(topic, body.encode(), MqttMeta(), None))


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
def test_tags_and_model_names_resolve_to_the_bundles_language(intake, tag, name):
    result = say(intake, f'{{"text": "hi", "lang": "{tag}"}}')
    assert result.accepted is not None, result.publish
    assert result.accepted.lang == name
    assert resolve_language(tag, LANGUAGES) == name


def test_auto_stays_auto(intake):
    assert say(intake, '{"text": "hi", "lang": "auto"}').accepted.lang == "auto"


@pytest.mark.parametrize("tag", ["ko", "ko-KR", "klingon", "xx-YY", "en-", "--", "tlh"])
def test_languages_the_bundle_cannot_speak_are_rejected_naming_the_tag(intake, tag):
    (event, *_) = say(intake, f'{{"text": "hi", "id": "l1", "lang": "{tag}"}}').publish
    assert (event.event, event.id) == ("rejected", "l1")
    assert tag in event.reason
    with pytest.raises(RequestError):
        resolve_language(tag, LANGUAGES)


def test_hermes_lang_tags_are_accepted_too(intake):
    result = say(intake, '{"text": "hallo", "lang": "de-DE", "siteId": "default"}', "hermes/tts/say")
    assert result.accepted is not None and result.accepted.lang == "german"
