"""Hostile payload fields: Unicode, control characters, ids, depth, number sizes, NaN, quoting."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.messages import COMMAND_MAX_BYTES, Inbound
from qwen3tts.appliance.mqtt.payload import MAX_JSON_DEPTH, has_speakable_text, quote, salvage_id
from qwen3tts.appliance.mqtt.say_reader import read_say, say_payload
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import read
from qwen3tts.errors import RequestError

BASE = "qwen3tts/hall"


def say(body: str | bytes) -> SimpleNamespace:
    """The fields of a say as read, by attribute."""
    return SimpleNamespace(**read_say(body.encode() if isinstance(body, str) else body))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"text": "hi", "id": "\\ud800"}', "lone surrogate"),
        ('{"text": "a\\udfffb"}', "lone surrogate"),
        ('{"text": "hi", "voice": "\\udc80x"}', "lone surrogate"),
        ('{"text": "hi", "extra": ["\\ud800"]}', "lone surrogate"),
        ('{"text": "hi", "\\ud800": 1}', "lone surrogate"),
        ('{"text": "nul\\u0000here"}', "control character (U+0000"),
        ('{"text": "bell\\u0007"}', "control character (U+0007"),
        ('{"text": "hi", "lang": "en\\nglish"}', "control character (U+000A"),
        ('{"text": "hi", "id": "a b"}', "is not a valid id"),
        ('{"text": "hi", "id": "ä"}', "is not a valid id"),
        ('{"text": "hi", "id": "' + "x" * 129 + '"}', "is not a valid id"),
        ('{"text": "hi", "id": ""}', "is not a valid id"),
        ('{"text": "hi", "ttl": NaN}', "NaN is not a number"),
        ('{"text": "hi", "expires_at": Infinity}', "Infinity is not a number"),
        ('{"text": "hi", "volume": -Infinity}', "-Infinity is not a number"),
        ('{"text": "hi", "ttl": 1e999}', "number out of range"),
        ('{"text": "hi", "repeat": ' + "9" * 5000 + "}", "number too long (5000 characters"),
        ('{"text": "hi", "chime": 5}', "field 'chime' must be a string"),
        ('{"text": "hi", "seed": -1}', "seed must be between 0 and 4294967295"),
        ('{"text": "hi", "seed": 4294967296}', "seed must be between"),
        ('{"text": "hi", "normalize": "yes"}', "field 'normalize' must be a boolean"),
        ('{"text": "hi", "cache": 1}', "field 'cache' must be a boolean"),
        (b"plain \x00 nul", "control character (U+0000"),
        (b"\xed\xa0\x80 encoded surrogate", "not valid UTF-8"),
    ],
)
def test_bad_fields_are_request_errors_naming_the_problem(body, reason):
    with pytest.raises(RequestError, match=None) as info:
        say(body)
    assert reason in str(info.value)


def test_deep_nesting_is_refused_before_decoding():
    deep = '{"text": "hi", "x": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with pytest.raises(RequestError, match="nested deeper than"):
        say(deep)
    ok = '{"text": "hi", "x": ' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}"
    assert say(ok).text == "hi"


def test_brackets_inside_strings_do_not_count_as_nesting():
    assert say(json.dumps({"text": "[[[[" * 100 + '{"}' * 50})).text.startswith("[[[[")


def test_valid_ids_use_the_documented_alphabet():
    assert say('{"text": "hi", "id": "Door:1.2_x-Y"}').id == "Door:1.2_x-Y"
    assert say('{"text": "hi", "id": "' + "a" * 128 + '"}').id == "a" * 128


def test_chime_booleans_mean_default_and_none_and_names_are_case_insensitive():
    assert say('{"text": "hi", "chime": true}').chime == "default"
    assert say('{"text": "hi", "chime": false}').chime == "none"
    assert say('{"text": "hi", "chime": "Emergency"}').chime == "emergency"


def test_normalize_seed_and_cache_are_read_and_round_trip():
    message = say('{"text": "hi", "normalize": false, "seed": 42, "cache": true}')
    assert (message.normalize, message.seed, message.cache) == (False, 42, True)
    assert say(say_payload(vars(message))) == message


def test_a_leading_byte_order_mark_is_not_part_of_the_text():
    assert say("\ufeffhello".encode()).text == "hello"
    assert say('\ufeff{"text": "json"}'.encode()).text == "json"


def test_invisible_text_has_nothing_to_speak():
    assert not has_speakable_text("\u200b\u200c\u200d\ufeff \u2060")
    assert has_speakable_text("\u200bja")


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "NaN"])
def test_volume_set_refuses_non_finite_numbers(text):
    with pytest.raises(RequestError, match="volume must be between 0 and 1"):
        SetVolume.from_mqtt(f"{BASE}/volume/set", text.encode())


@pytest.mark.parametrize(
    ("suffix", "cls"), [("stop", Stop), ("volume/set", SetVolume), ("voice/set", SetVoice)]
)
def test_every_command_topic_has_a_size_limit_checked_before_decoding(suffix, cls):
    huge = b"\xff" * (10 * 1024 * 1024)  # not even UTF-8: the size check must come first
    with pytest.raises(RequestError, match=rf"payload too large \(10485760 bytes > {COMMAND_MAX_BYTES}\)"):
        read(Topics(BASE), Inbound(f"{BASE}/{suffix}", huge))


def test_say_size_limit_is_the_policy_one():
    with pytest.raises(RequestError, match="payload too large"):
        read(Topics(BASE), Inbound(f"{BASE}/say", b"x" * 101), say_max_bytes=100)


def test_stop_and_voice_refuse_bad_ids_and_names():
    with pytest.raises(RequestError, match="not a valid id"):
        Stop.from_mqtt(f"{BASE}/stop", b'{"scope": "id", "id": "a\\nb"}')
    with pytest.raises(RequestError, match="control character"):
        SetVoice.from_mqtt(f"{BASE}/voice/set", b"ry\x1ban")
    with pytest.raises(RequestError, match="too long"):
        SetVoice.from_mqtt(f"{BASE}/voice/set", b"v" * 65)


def test_quote_escapes_line_breaks_and_controls_and_shortens():
    forged = quote("a\nINFO fake\r\u2028\x1b[31m")
    assert "\n" not in forged and "\r" not in forged and "\u2028" not in forged and "\x1b" not in forged
    assert forged.startswith("'a\\nINFO fake")
    long = quote("x" * 10_000)
    assert len(long) < 240 and long.endswith("…(+9800 characters)")
    assert quote("\ud800") == "'\\ud800'"


def test_salvage_id_reads_the_callers_id_from_an_otherwise_invalid_payload():
    assert salvage_id(b'{"id": "keep-me", "text": "a\\u0000", "volume": "loud"}') == "keep-me"
    assert salvage_id(b'{"id": "bad id"}') is None
    assert salvage_id(b"not json") is None
    assert salvage_id(b'{"id": "x", "deep": ' + b"[" * 5000 + b"]" * 5000 + b"}") is None


@pytest.mark.parametrize(
    "body",
    [
        '{"text": "' + '\\"' * 32_000,  # every quote escaped, never closed
        '{"text": "' + '\\"' * 32_000 + "\\",  # ... ending in a lone backslash
        "{" + '"' * 65_000,
    ],
    ids=["escaped-quotes", "trailing-backslash", "only-quotes"],
)
def test_pathological_quotes_at_the_size_limit_are_malformed_json_in_one_pass(body):
    """The nesting pre-scan reads each string once (it was quadratic in the number of `\\"`)."""
    with pytest.raises(RequestError, match="malformed JSON"):
        say(body)


def test_brackets_in_an_unterminated_string_do_not_count_as_nesting():
    with pytest.raises(RequestError, match="malformed JSON"):
        say('{"text": "' + "[" * 1000)
