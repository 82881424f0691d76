"""Every inbound message gets its answer: ids kept, response topics checked, commands acknowledged."""

from __future__ import annotations

import logging

import pytest

from qwen3tts.appliance.mqtt.events import DiscoveryConfig, Event, Reply
from qwen3tts.appliance.mqtt.hermes import HermesError, HermesSayFinished
from qwen3tts.appliance.mqtt.intake import DISCOVERY_MIN_INTERVAL_S, AnnouncementIntake, AnnouncementPolicy
from qwen3tts.appliance.mqtt.messages import Inbound, MqttMeta, SetVoice, Stop, Topics
from qwen3tts.appliance.mqtt.policy import INSTRUCT_IGNORED
from qwen3tts.appliance.announcements.queue import AnnouncementQueue

BASE = "qwen3tts/hall"


class Harness:
    def __init__(self, tmp_path, *, topics=None, active=None, policy=None, **kw) -> None:
        self.now = 1_000_000.0
        self.queue = AnnouncementQueue(tmp_path / "spool")
        self.intake = AnnouncementIntake(
            self.queue,
            policy or AnnouncementPolicy(voices=("ryan", "vivian"), languages=("english", "german")),
            topics or Topics(base=BASE, hermes=True),
            ack=lambda token: None,
            discovery=lambda: [DiscoveryConfig("button", "n", "stop", {"name": "Stop"})],
            active_ids=active,
            clock=lambda: self.now,
            **kw,
        )

    def send(self, payload, topic="say", **meta):
        data = payload.encode() if isinstance(payload, str) else payload
        full = topic if "/" in topic else f"{BASE}/{topic}"
        if topic == "volume/set" or topic == "voice/set":
            full = f"{BASE}/{topic}"
        return self.intake.handle(Inbound(full, data, MqttMeta(**meta), "tok"))


def events(result) -> list[Event]:
    return [m for m in result.publish if isinstance(m, Event)]


def only_event(result) -> Event:
    (event,) = events(result)
    return event


@pytest.fixture
def harness(tmp_path):
    return Harness(tmp_path)


@pytest.mark.parametrize(
    "payload",
    [
        '{"id": "x1", "text": "hi", "chime": 5}',
        '{"id": "x1", "text": "hi", "volume": "loud"}',
        '{"id": "x1", "text": "\\u0000"}',
        '{"id": "x1", "text": "hi", "ttl": NaN}',
        '{"id": "x1", "text": "hi", "voice": "darth"}',
        '{"id": "x1", "text": "hi", "chime": "klaxon"}',
    ],
)
def test_rejected_event_keeps_the_callers_id_and_correlation_data(harness, payload):
    event = only_event(harness.send(payload, correlation_data=b"c"))
    assert (event.event, event.id, event.correlation_data) == ("rejected", "x1", b"c")


def test_instruct_the_bundle_cannot_use_is_ignored_with_a_warning(tmp_path):
    harness = Harness(tmp_path, policy=AnnouncementPolicy(supports_instruct=False))
    result = harness.send('{"text": "hi", "instruct": "whisper"}')
    assert only_event(result).warnings == (INSTRUCT_IGNORED,) and result.accepted.instruct is None
    kept = Harness(tmp_path / "b").send('{"text": "hi", "instruct": "whisper"}')
    assert only_event(kept).warnings == () and kept.accepted.instruct == "whisper"


def test_language_names_resolve_to_the_bundles_spelling(harness):
    assert harness.send('{"text": "hi", "lang": "German"}').accepted.lang == "german"
    assert harness.send('{"text": "hi", "lang": "AUTO"}').accepted.lang == "auto"


@pytest.mark.parametrize(
    ("topic", "why"),
    [
        (f"{BASE}/reply/#", "wildcard"),
        ("qwen3tts/other-site/stop", "not under"),
        (f"{BASE}/stop", "not under"),
        (f"{BASE}/reply/x/stop", "command"),
        ("replies/me", "not under"),
        ("$SYS/broker", "$ topics"),
        (f"{BASE}/reply/" + "x" * 300, "longer than"),
    ],
)
def test_unsafe_response_topics_get_no_answer_and_the_event_says_why(harness, topic, why):
    result = harness.send('{"text": "hi", "id": "r"}', response_topic=topic, correlation_data=b"c")
    event = only_event(result)
    assert not any(isinstance(m, Reply) for m in result.publish)
    assert event.event == "queued" and why in event.warnings[0] and result.accepted.response_topic is None


def test_response_topics_under_the_configured_prefix_are_answered(tmp_path):
    harness = Harness(tmp_path, topics=Topics(BASE, response_prefix="replies"))
    result = harness.send('{"text": "hi"}', response_topic="replies/me", correlation_data=b"c")
    (reply,) = [m for m in result.publish if isinstance(m, Reply)]
    assert reply.topic(BASE) == "replies/me" and reply.event.correlation_data == b"c"
    refused = harness.send('{"text": "hi"}', response_topic="replies/me/say")
    assert not any(isinstance(m, Reply) for m in refused.publish)


def test_stop_with_an_unknown_id_is_answered_not_found(harness):
    result = harness.send('{"scope": "id", "id": "ghost"}', "stop")
    event = only_event(result)
    assert (event.event, event.id, event.scope) == ("not_found", "ghost", "id") and result.commands == []


def test_stop_of_an_id_being_spoken_goes_to_the_player_and_is_acknowledged(tmp_path):
    harness = Harness(tmp_path, active=lambda: {"speaking"})
    result = harness.send('{"scope": "id", "id": "speaking"}', "stop")
    assert result.commands == [Stop("id", "speaking")] and only_event(result).event == "stopped"
    assert only_event(harness.send('{"scope": "id", "id": "other"}', "stop")).event == "not_found"


def test_stop_all_lists_what_it_cancelled(harness):
    harness.send('{"text": "a", "id": "a"}')
    harness.send('{"text": "b", "id": "b"}')
    result = harness.send("all", "stop", response_topic=f"{BASE}/reply/ops")
    assert [e.event for e in events(result)] == ["cancelled", "cancelled", "stopped"]
    assert events(result)[-1].cancelled == ("a", "b") and result.commands == [Stop("all")]
    assert any(isinstance(m, Reply) and m.event.event == "stopped" for m in result.publish)


def test_voice_set_is_checked_against_the_bundle_and_acknowledged(harness):
    result = harness.send("VIVIAN", "voice/set")
    assert result.commands == [SetVoice("vivian")] and only_event(result).voice == "vivian"
    refused = only_event(harness.send("darth", "voice/set"))
    assert refused.event == "rejected" and "unknown voice 'darth'" in refused.reason


def test_home_assistant_births_are_throttled(harness):
    published = [len(harness.send("online", "homeassistant/status").publish) for _ in range(50)]
    assert published == [1] + [0] * 49
    harness.now += DISCOVERY_MIN_INTERVAL_S
    assert len(harness.send("online", "homeassistant/status").publish) == 1


def test_hermes_refusal_still_gets_say_finished_with_a_generated_id_and_an_error(harness):
    result = harness.send('{"text": "", "siteId": "default", "sessionId": "s1"}', "hermes/tts/say")
    event = only_event(result)
    (error,) = [m for m in result.publish if isinstance(m, HermesError)]
    (finished,) = [m for m in result.publish if isinstance(m, HermesSayFinished)]
    assert event.event == "rejected" and finished.id == event.id and len(finished.id) == 36
    assert (finished.session_id, finished.site_id, error.context) == ("s1", "default", event.id)


def test_hermes_garbage_for_another_site_is_not_answered(harness):
    assert harness.send('{"siteId": "garage", "text": 5}', "hermes/tts/say").publish == []


def test_hermes_cancel_and_expiry_end_with_say_finished(harness):
    accepted = harness.send('{"text": "hi", "id": "h1", "siteId": "default"}', "hermes/tts/say").accepted
    result = harness.send('{"scope": "id", "id": "h1"}', "stop")
    assert HermesSayFinished("h1", "default", None) in result.publish
    assert accepted.chime == "none"  # dialogue replies play no announcement chime by default


def test_hermes_chime_can_be_switched_on(tmp_path):
    harness = Harness(tmp_path, hermes_chime=True)
    assert harness.send('{"text": "hi", "siteId": "default"}', "hermes/tts/say").accepted.chime is None


def test_duplicate_memory_survives_a_restart_after_the_announcement_left_the_spool(tmp_path):
    first = Harness(tmp_path)
    ann = first.send('{"text": "a", "id": "done-1"}').accepted
    first.queue.done(first.queue.pop_next(first.now), first.now)  # played: gone from the spool
    assert ann.id == "done-1" and first.queue.spool.load() == []
    again = Harness(tmp_path)
    again.intake.replay()
    assert again.send('{"text": "a", "id": "done-1"}').publish == [] and len(again.queue) == 0


def test_a_redelivered_message_without_id_is_a_duplicate_but_a_fresh_repeat_is_not(tmp_path):
    first = Harness(tmp_path)
    first.send("doorbell")
    restarted = Harness(tmp_path)  # killed after the spool write, before the ack
    restarted.intake.replay()
    assert restarted.send("doorbell", dup=True).publish == [] and len(restarted.queue) == 1
    assert only_event(restarted.send("doorbell")).event == "queued" and len(restarted.queue) == 2


def test_ids_and_texts_cannot_forge_log_lines(harness, caplog):
    caplog.set_level(logging.DEBUG)
    harness.send('{"id": "a\\nINFO fake", "text": "x\\nINFO fake"}')
    harness.send('{"scope": "weird\\nINFO fake"}', "stop")
    harness.send("dar\nINFO fake", "voice/set")
    assert caplog.records and all("\n" not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "event",
    [
        Event("stopped", scope="all", cancelled=("a", "b"), t_event=1.0),
        Event("queued", "q", warnings=(INSTRUCT_IGNORED,), t_event=2.0),
        Event("volume_set", volume=0.25, t_event=3.0),
        Event("voice_set", voice="ryan", t_event=4.0),
        Event("not_found", "ghost", "no announcement", scope="id", t_event=5.0),
    ],
)
def test_answer_events_round_trip_and_leave_out_what_they_do_not_use(event):
    body = event.payload()
    assert Event.from_mqtt(f"{BASE}/event", body) == event
    assert b"null" not in body and b"[]" not in body
