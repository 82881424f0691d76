"""The intake without a broker: validate -> spool (fsync) -> ack -> queued event; never raises."""

from __future__ import annotations

import json

import pytest

from qwen3tts.appliance.mqtt.events import DiscoveryConfig, Event, Reply
from qwen3tts.appliance.mqtt.hermes import HermesError, HermesSayFinished
from qwen3tts.appliance.mqtt.intake import AnnouncementIntake, AnnouncementPolicy, announcement_events
from qwen3tts.appliance.mqtt.messages import Inbound, MqttMeta, SetVolume, Stop, Topics
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.errors import RequestError

BASE = "qwen3tts/hall"
NOW = 1_000_000.0


class Harness:
    def __init__(self, tmp_path, **policy) -> None:
        self.queue = AnnouncementQueue(tmp_path / "spool", max_queue=3)
        self.acks: list[tuple[object, list[str]]] = []
        self.intake = AnnouncementIntake(
            self.queue,
            AnnouncementPolicy(voices=("ryan",), languages=("english",), **policy),
            Topics(base=BASE, hermes=True),
            ack=lambda token: self.acks.append((token, self.spool_files())),
            discovery=lambda: [DiscoveryConfig("button", "n", "stop", {"name": "Stop"})],
            clock=lambda: NOW,
        )

    def spool_files(self) -> list[str]:
        return sorted(p.name for p in self.queue.spool.directory.glob("*.json"))

    def say(self, payload, *, topic=f"{BASE}/say", token="tok", **meta):
        data = payload.encode() if isinstance(payload, str) else payload
        return self.intake.handle(Inbound(topic, data, MqttMeta(**meta), token))


@pytest.fixture
def harness(tmp_path):
    return Harness(tmp_path)


def only_event(result) -> Event:
    (event,) = [m for m in result.publish if isinstance(m, Event)]
    return event


def test_accepted_say_is_spooled_before_it_is_acknowledged(harness):
    result = harness.say('{"text": "hello", "id": "a"}', token="t1")
    assert harness.acks == [("t1", ["000000000001.json"])]  # the file existed when the ack went out
    assert only_event(result).event == "queued" and result.accepted.id == "a"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"x" * 70_000, "payload too large (70000 bytes > 65536)"),
        ("a" * 2001, "text too long (2001 characters > 2000)"),
        ('{"text": "a", "repeat": 0}', "repeat must be between 1 and 10, got 0"),
        ('{"text": "a", "repeat": 11}', "repeat must be between 1 and 10"),
        ('{"text": "a", "ttl": 0}', "ttl must be positive"),
        ('{"text": "a", "voice": "zed"}', "unknown voice 'zed'; known: ryan"),
        ('{"text": "a", "lang": "french"}', "language 'french' is not in this bundle"),
    ],
)
def test_invalid_say_is_acknowledged_and_rejected_with_the_reason(harness, payload, reason):
    result = harness.say(payload, token="t")
    event = only_event(result)
    assert event.event == "rejected" and event.reason.startswith(reason)
    assert harness.acks == [("t", [])] and len(harness.queue) == 0


def test_known_voice_and_language_match_case_insensitively_and_auto_is_always_known(harness):
    assert only_event(harness.say('{"text": "a", "voice": "Ryan", "lang": "auto"}')).event == "queued"


@pytest.mark.parametrize("topic", [f"{BASE}/say", f"{BASE}/stop", f"{BASE}/volume/set", f"{BASE}/voice/set"])
def test_retained_commands_are_refused_and_not_obeyed(harness, topic):
    result = harness.say('{"text": "old news", "id": "old"}', topic=topic, retain=True, token="t")
    event = only_event(result)
    assert (event.event, event.id) == ("rejected", "old") and "retained" in event.reason
    assert result.commands == [] and harness.acks == [("t", [])] and len(harness.queue) == 0


def test_duplicate_id_is_dropped_even_after_a_restart(harness, tmp_path):
    harness.say('{"text": "a", "id": "d"}')
    assert harness.say('{"text": "again", "id": "d"}').publish == []
    restarted = Harness(tmp_path)
    assert restarted.intake.replay() == []
    assert restarted.say('{"text": "redelivered", "id": "d"}').publish == []
    assert restarted.queue.ids() == ["d"]


def test_the_earliest_of_ttl_expires_at_and_message_expiry_wins(harness):
    harness.say('{"text": "a", "id": "a", "ttl": 60, "expires_at": 1000030}', message_expiry=90)
    harness.say('{"text": "b", "id": "b"}', message_expiry=10)
    assert [a.expires_at for a in (harness.queue.pop_next(NOW), harness.queue.pop_next(NOW))] == [
        NOW + 30,
        NOW + 10,
    ]


def test_default_ttl_applies_only_when_the_request_gives_no_deadline(tmp_path):
    harness = Harness(tmp_path, default_ttl=120.0)
    harness.say('{"text": "a", "id": "a"}')
    harness.say('{"text": "b", "id": "b", "expires_at": 2000000}')
    assert [harness.queue.pop_next(NOW).expires_at for _ in range(2)] == [NOW + 120, 2_000_000]


def test_already_expired_say_gets_an_expired_event_and_is_not_queued(harness):
    event = only_event(harness.say('{"text": "a", "id": "late", "expires_at": 5}'))
    assert (event.event, event.id) == ("expired", "late") and len(harness.queue) == 0


def test_full_queue_rejects(harness):
    for i in range(3):
        harness.say(f'{{"text": "x", "id": "q{i}"}}')
    assert (
        only_event(harness.say('{"text": "x", "id": "q3"}')).reason == "queue full (3 announcements waiting)"
    )


def test_response_topic_gets_a_reply_with_the_correlation_data(harness):
    topic = f"{BASE}/reply/me"
    result = harness.say('{"text": "a", "id": "r"}', response_topic=topic, correlation_data=b"c1")
    event, reply = result.publish
    assert isinstance(reply, Reply) and reply.topic(BASE) == topic and reply.event == event
    assert event.meta().correlation_data == b"c1"


def test_rejected_say_still_replies_to_the_response_topic(harness):
    result = harness.say(b"\xff", response_topic=f"{BASE}/reply/x", correlation_data=b"c2")
    event, reply = result.publish
    assert event.event == "rejected" and reply.event.correlation_data == b"c2"


def test_stop_id_cancels_a_waiting_entry_without_bothering_the_player(harness):
    harness.say('{"text": "a", "id": "a"}')
    result = harness.say('{"scope": "id", "id": "a"}', topic=f"{BASE}/stop")
    assert [(e.event, e.id) for e in result.publish] == [("cancelled", "a"), ("stopped", "a")]
    assert result.commands == [] and result.publish[-1].cancelled == ("a",)


def test_stop_current_and_volume_are_commands_for_the_player_and_acknowledged(harness):
    stop = harness.say("", topic=f"{BASE}/stop")
    assert stop.commands == [Stop("current")] and (only_event(stop).event, only_event(stop).scope) == (
        "stopped",
        "current",
    )
    volume = harness.say("0.5", topic=f"{BASE}/volume/set")
    assert volume.commands == [SetVolume(0.5)] and only_event(volume).volume == 0.5
    assert only_event(volume).event == "volume_set"
    assert only_event(harness.say("7", topic=f"{BASE}/volume/set")).event == "rejected"


def test_home_assistant_online_republishes_discovery(harness):
    assert [m.object_id for m in harness.say("online", topic="homeassistant/status").publish] == ["stop"]
    assert harness.say("offline", topic="homeassistant/status").publish == []


def test_hermes_say_is_filtered_by_site_and_answered_after_playback(harness):
    assert harness.say('{"text": "x", "siteId": "garage"}', topic="hermes/tts/say").publish == []
    result = harness.say(
        '{"text": "x", "id": "h", "siteId": "default", "sessionId": "s"}', topic="hermes/tts/say"
    )
    ann = result.accepted
    finished = announcement_events(ann, "finished", now=NOW)
    assert finished[-1] == HermesSayFinished(id="h", site_id="default", session_id="s")
    assert announcement_events(ann, "error", "boom", now=NOW)[-2:] == [
        HermesError("boom", "h", "default", "s"),
        HermesSayFinished(id="h", site_id="default", session_id="s"),
    ]


def test_nothing_escapes_handle_even_when_the_queue_breaks(harness):
    def broken_put(ann):
        raise RuntimeError("disk on fire")

    harness.queue.put = broken_put
    event = only_event(harness.say('{"text": "a"}', token="t"))
    assert (event.event, event.reason) == ("error", "RuntimeError: disk on fire")
    assert [token for token, _ in harness.acks] == ["t"]


def test_spool_write_failure_is_an_error_event_not_an_acceptance(harness):
    def full_disk(ann):
        raise OSError(28, "No space left on device")

    harness.queue.put = full_disk
    event = only_event(harness.say('{"text": "a", "id": "a"}'))
    assert event.event == "error" and "spool write failed" in event.reason
    assert json.loads(event.payload())["id"] == "a"


def test_policy_errors_are_request_errors(harness):
    with pytest.raises(RequestError):
        harness.intake.policy.check_size(b"x" * 65537)
