"""The MQTT door's validator (validate.py) on its own: every inbound message -> a validated message or
announcement, a Rejection with the exact reason users see in the `rejected` event, or Ignored; no
payload on any topic makes it raise. The shared rules give the reasons the other doors give."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.hermes import HermesPlayFinished, HermesSay
from qwen3tts.appliance.mqtt.hermes_sites import HermesSites
from qwen3tts.appliance.mqtt.messages import HomeAssistantStatus, Inbound, Message, Say
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.routing import subscriptions
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import RETAINED_REASON, Ignored, Rejection, read, validate
from qwen3tts.errors import RequestError
from qwen3tts.synthesis import checked_speech
from qwen3tts.voices.catalog import VoiceCatalog

BASE = "qwen3tts/hall"
NOW = 1_000_000.0
TOPICS = Topics(BASE, hermes=True, hermes_satellites=("porch",), zone_base="qwen3tts/zone", zones=("lobby",))
POLICY = AnnouncementPolicy(max_payload_bytes=4096, catalog=VoiceCatalog(("Ryan", "Vivian"), ("english",)))


def check(payload: bytes | str, topic: str = f"{BASE}/say", policy: AnnouncementPolicy = POLICY, **inbound):
    raw = payload.encode() if isinstance(payload, str) else payload
    hermes = HermesSites("default", TOPICS, lambda message: None)
    return validate(Inbound(topic, raw, **inbound), TOPICS, policy, hermes, NOW)


def rejected(payload: bytes | str, topic: str = f"{BASE}/say", **kw) -> str:
    verdict = check(payload, topic, **kw)
    assert isinstance(verdict, Rejection), verdict
    return verdict.reason


def test_a_valid_say_is_its_announcement_with_checked_text_and_names_in_the_catalogs_spelling():
    ann = check(
        b'{"text": "  Mind the gap \\n", "id": "s1", "voice": "ryan", "lang": "English", "repeat": 2}'
    )
    assert isinstance(ann, Announcement)
    assert (ann.id, ann.text, ann.voice, ann.lang, ann.repeat) == ("s1", "Mind the gap", "Ryan", "english", 2)
    assert ann.t_queued == NOW and ann.warnings == ()
    plain = check(b"  Doors closing  ", response_topic="r/1", correlation_data=b"c")
    assert (plain.text, plain.response_topic, plain.correlation_data) == ("Doors closing", "r/1", b"c")


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xc3\x28", "payload is not valid UTF-8 (byte 0)"),
        (b"{nope", "malformed JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        (b'{"id": "a"}', "missing field 'text'"),
        (b'{"text": "a", "id": "a b"}', "field 'id' 'a b' is not a valid id (1-128 of A-Z a-z 0-9 . _ : -)"),
        (b'{"text": "a", "volume": true}', "field 'volume' must be a number, got bool"),
        (
            b'{"text": "a", "priority": "urgent"}',
            "unknown priority 'urgent'; expected one of normal, priority, emergency",
        ),
        (b'{"text": "a", "seed": -1}', "seed must be between 0 and 4294967295, got -1"),
        (b'{"text": "a", "zones": []}', "field 'zones' is empty; leave it out for an all-call"),
        (b'{"text": "a\\u0007"}', "field 'text' contains a control character (U+0007 at character 1)"),
        (b'{"text": "a", "ttl": NaN}', "NaN is not a number this appliance accepts"),
        (b"x" * 4097, "payload too large (4097 bytes > 4096)"),
    ],
)
def test_a_say_that_cannot_be_read_is_rejected_with_the_reason_users_see(payload, reason):
    assert rejected(payload) == reason
    assert check(b"[1]").text == "[1]"  # a payload that is no JSON object is plain text to speak


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"text": "   "}', "empty text"),
        (b'{"text": "' + b"a" * 2001 + b'"}', "text too long (2001 characters > 2000)"),
        (b'{"text": "a", "volume": 2}', "volume must be between 0 and 1, got 2.0"),
        (b'{"text": "a", "repeat": 11}', "repeat must be between 1 and 10, got 11"),
        (b'{"text": "a", "repeat_interval": 4000}', "repeat_interval must be 0..3600 s"),
        (b'{"text": "a", "ttl": 0}', "ttl must be positive, got 0.0"),
        (b'{"text": "a", "chime": "gong"}',
         "unknown chime 'gong'; expected one of default, none, normal, priority, emergency"),
        (b'{"text": "a", "voice": "bob"}', "unknown voice 'bob'; known: Ryan, Vivian"),
        (b'{"text": "a", "instruct": "' + b"b" * 2001 + b'"}', "instruct too long (2001 characters > 2000)"),
    ],
)  # fmt: skip
def test_a_say_the_policy_refuses_keeps_what_was_read_of_it_for_its_rejected_event(payload, reason):
    verdict = check(payload[:-1] + b', "id": "keep"}')
    assert isinstance(verdict, Rejection) and verdict.kind is Say
    assert (verdict.reason, verdict.id) == (reason, "keep")


def test_the_shared_text_rules_give_the_reason_every_door_gives():
    for text in ("<speak><p>open", "<speak><voice name='bob'>hi</voice></speak>", "\u200b\u200b"):
        with pytest.raises(RequestError) as shared:
            checked_speech(text, None, 2000, POLICY.catalog, None)
        assert rejected(text) == str(shared.value)


def test_a_retained_request_is_refused_a_retained_notice_only_ignored():
    assert check(b"hi", retain=True) == Rejection(RETAINED_REASON, Say)
    assert check(b"all", f"{BASE}/stop", retain=True) == Rejection(RETAINED_REASON, Stop)
    finished = check(b'{"id": "a1"}', "hermes/audioServer/porch/playFinished", retain=True)
    assert isinstance(finished, Ignored) and finished.level == logging.DEBUG
    assert check(b"online", "homeassistant/status", retain=True) == HomeAssistantStatus(True)


def test_topics_we_do_not_serve_and_hermes_sites_not_ours_are_ignored_not_answered():
    assert check(b"hi", "qwen3tts/other/say") == Ignored(
        "ignoring a message on a topic we do not serve", logging.WARNING
    )
    assert check(b'{"text": "hi", "siteId": "garage"}', "hermes/tts/say") == Ignored(
        "ignoring a Hermes say for another siteId"
    )
    bad = check(b'{"siteId": "porch"}', "hermes/audioServer/porch/playFinished")
    assert bad == Ignored("ignoring a bad Hermes playFinished: field 'id' is required", logging.WARNING)
    assert isinstance(check(b"x" * 65, "homeassistant/status"), Ignored)


def test_a_hermes_say_for_our_site_is_admitted_in_its_zones_with_its_site_and_session():
    ann = check(b'{"text": "hi", "id": "h1", "siteId": "porch", "sessionId": "s"}', "hermes/tts/say")
    assert isinstance(ann, Announcement)
    got = (ann.id, ann.zones, ann.hermes_site_id, ann.session_id, ann.chime)
    assert got == ("h1", ("porch",), "porch", "s", "none")
    refused = check(b'{"text": "", "id": "h2"}', "hermes/tts/say")
    assert refused == Rejection("empty text", HermesSay, "h2", "default")


def test_a_request_that_cannot_be_read_is_rejected_naming_the_callers_id_salvaged_from_its_payload():
    assert check(b'{"text": "a", "id": "keep", "volume": "loud"}') == Rejection(
        "field 'volume' must be a number, got str", Say, "keep"
    )
    assert check(b'{"text": "a", "id": "a b", "volume": "loud"}').id is None  # not an id we would take
    unread = check(b'{"text": 5, "id": "h3", "siteId": "porch", "sessionId": "s"}', "hermes/tts/say")
    assert unread == Rejection("field 'text' must be a string, got int", HermesSay, "h3", "porch", "s")
    elsewhere = check(b'{"text": 5, "siteId": "garage"}', "hermes/tts/say")
    assert elsewhere == Ignored("ignoring an invalid Hermes say for another siteId")
    assert check(b'{"text": "a"}', "hermes/tts/say", retain=True) == Rejection(
        RETAINED_REASON, HermesSay, None, "default"
    )


def test_a_zone_topic_say_is_for_that_zone_and_its_zones_field_must_agree():
    assert check(b"hi", "qwen3tts/zone/lobby/say").zones == ("lobby",)
    assert rejected(b'{"text": "hi", "zones": ["hall"]}', "qwen3tts/zone/lobby/say") == (
        "field 'zones' ['hall'] disagrees with the zone topic of 'lobby'"
    )
    boxed = AnnouncementPolicy(zones=("lobby",))
    assert (
        rejected(b'{"text": "hi", "zones": ["hall"]}', policy=boxed)
        == "unknown zone 'hall'; this box has lobby"
    )


def test_commands_are_read_and_voice_set_resolved_through_the_catalog():
    assert check(b'{"scope": "id", "id": "a"}', f"{BASE}/stop") == Stop("id", "a")
    assert check(b"0.5", f"{BASE}/volume/set") == SetVolume(0.5)
    assert check(b"vivian", f"{BASE}/voice/set") == SetVoice("Vivian")
    refused = check(b"bob", f"{BASE}/voice/set")
    assert (refused.reason, refused.kind) == ("unknown voice 'bob'; known: Ryan, Vivian", SetVoice)
    assert rejected(b"loud", f"{BASE}/volume/set") == "volume must be a number, got 'loud'"
    assert rejected(b"everything", f"{BASE}/stop") == (
        "unknown stop scope 'everything'; expected one of current, all, id"
    )
    assert check(b'{"id": "a1"}', "hermes/audioServer/porch/playFinished") == HermesPlayFinished(
        "a1", "porch"
    )


def test_read_dispatches_by_topic_and_refuses_unknown_topics():
    topics = Topics(base=BASE, hermes=True)
    assert read(topics, Inbound(f"{BASE}/say", b"hi"))["text"] == "hi"  # a say's fields (say_reader.py)
    assert isinstance(read(topics, Inbound(f"{BASE}/volume/set", b"1")), SetVolume)
    assert isinstance(read(topics, Inbound("homeassistant/status", b"online")), HomeAssistantStatus)
    assert isinstance(read(topics, Inbound("hermes/tts/say", b'{"text":"x"}')), HermesSay)
    with pytest.raises(RequestError, match="no handler"):
        read(Topics(base=BASE), Inbound("hermes/tts/say", b'{"text":"x"}'))
    with pytest.raises(RequestError, match="no handler"):
        read(topics, Inbound("qwen3tts/other/say", b"hi"))


def test_read_carries_the_mqtt5_properties_of_the_inbound_into_the_say():
    inbound = Inbound(f"{BASE}/say", b"hi", response_topic="r", correlation_data=b"c", message_expiry=9)
    say = read(Topics(BASE), inbound)
    assert (say["response_topic"], say["correlation_data"], say["message_expiry"]) == ("r", b"c", 9)


SERVED = [topic for topic, _ in subscriptions(TOPICS)] + ["qwen3tts/other/say", ""]


@settings(max_examples=300, deadline=None)
@given(
    topic=st.sampled_from(SERVED),
    payload=st.one_of(
        st.binary(max_size=300), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))
    ),
    retain=st.booleans(),
)
def test_no_payload_on_any_topic_makes_the_validator_raise(topic, payload, retain):
    verdict = check(payload, topic, retain=retain)
    assert isinstance(verdict, Rejection | Ignored | Announcement | Message)
    if isinstance(verdict, Rejection):
        assert verdict.reason and len(verdict.reason) < 1000
