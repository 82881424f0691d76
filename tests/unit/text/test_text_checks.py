"""The neutral text checks give the reasons the MQTT door gives, for the same hostile input."""

from __future__ import annotations

import pytest

from qwen3tts.appliance.mqtt import payload
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.say_reader import admit
from qwen3tts.errors import RequestError
from qwen3tts.text import checks

HOSTILE_JSON = [
    '{"text": "a \\ud800 b"}', '{"text": "a\\u0000b"}', '{"text": "\\u001b[31m"}', '{"\\u0007": 1}',
    "[" * 40 + "]" * 40, '{"x": 1' + "0" * 40 + "}", '{"x": NaN}', '{"x": 1e999}', "[1]", '{"a": ', "",
]  # fmt: skip
HOSTILE_TEXT = ["a \ud800 b", "a\x00b", "\x1b[31mred", "\u200b\ufeff", "   ", "x" * 2001, "fine text"]


def reason(call, *args, **kwargs) -> str:
    try:
        call(*args, **kwargs)
    except RequestError as exc:
        return str(exc)
    return "accepted"


@pytest.mark.parametrize("text", HOSTILE_JSON)
def test_json_reasons_are_the_mqtt_doors(text):
    assert reason(checks.decode_json_object, text) == reason(payload.decode_json_object, text)


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_text_reasons_are_the_mqtt_doors(text):
    policy = AnnouncementPolicy(max_text_chars=2000)
    say = {"text": text, "ssml": False}
    assert reason(checks.checked_text, text, 2000) == reason(admit, policy, 0.0, **say)


def test_utf8_reasons_are_the_mqtt_doors():
    for raw in (b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbfok"):
        assert reason(checks.decode_text, raw) == reason(payload.decode_text, raw)
    assert checks.decode_text(b"\xef\xbb\xbfok") == "ok"
