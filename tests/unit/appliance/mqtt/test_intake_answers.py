"""Every inbound message gets its answer: ids kept, response topics checked, commands answered once done.

The real intake hands over to the real announcer (tests/support/mqtt_door.py); the answers to say,
stop, volume/set and voice/set come from the announcer once it applied them, refusals from the intake.
"""

from __future__ import annotations

import json
import logging

import pytest
from mqtt_door import NOW, MqttDoor, events_in, only_event, policy_for, replay_spool

from qwen3tts.appliance.announcements.announcement import Cut
from qwen3tts.appliance.mqtt.events import DiscoveryConfig, Event, Reply
from qwen3tts.appliance.mqtt.hermes import HermesError, HermesSayFinished
from qwen3tts.appliance.mqtt.intake import DISCOVERY_MIN_INTERVAL_S
from qwen3tts.appliance.mqtt.topics import Topics

INSTRUCT_IGNORED = "instruct ignored: this bundle cannot follow style instructions"

BASE = "qwen3tts/hall"


STOP_BUTTON = DiscoveryConfig("button", "n", "stop", {"name": "Stop"})


def make(tmp_path, **kw) -> MqttDoor:
    return MqttDoor(tmp_path, discovery=lambda: [STOP_BUTTON], **kw)


@pytest.fixture
def door(tmp_path):
    return make(tmp_path)


def replies(messages) -> list[Reply]:
    return [m for m in messages if isinstance(m, Reply)]


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
def test_rejected_event_keeps_the_callers_id_and_correlation_data(door, payload):
    event = only_event(door.send(payload, correlation_data=b"c"))
    assert (event.event, event.id, event.correlation_data) == ("rejected", "x1", b"c")


def test_instruct_the_bundle_cannot_use_is_ignored_with_a_warning(tmp_path):
    door = make(tmp_path, policy=policy_for(supports_instruct=False))
    assert only_event(door.send('{"text": "hi", "instruct": "whisper"}')).warnings == (INSTRUCT_IGNORED,)
    assert door.accepted()[0].instruct is None
    kept = make(tmp_path / "b")
    assert only_event(kept.send('{"text": "hi", "instruct": "whisper"}')).warnings == ()
    assert kept.accepted()[0].instruct == "whisper"


def test_language_names_resolve_to_the_bundles_spelling(door):
    door.send('{"text": "hi", "lang": "German"}')
    door.send('{"text": "hi", "lang": "AUTO"}')
    assert [a.lang for a in door.accepted()] == ["german", "auto"]


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
def test_unsafe_response_topics_get_no_answer_and_the_event_says_why(door, topic, why):
    out = door.send('{"text": "hi", "id": "r"}', response_topic=topic, correlation_data=b"c")
    event = only_event(out)
    assert not replies(out) and event.event == "queued" and why in event.warnings[0]
    assert door.accepted()[0].response_topic is None


def test_response_topics_under_the_configured_prefix_are_answered(tmp_path):
    door = make(tmp_path, topics=Topics(BASE, response_prefix="replies"))
    (reply,) = replies(door.send('{"text": "hi"}', response_topic="replies/me", correlation_data=b"c"))
    assert reply.topic(BASE) == "replies/me" and reply.event.correlation_data == b"c"
    assert reply.event.event == "queued"
    assert not replies(door.send('{"text": "hi"}', response_topic="replies/me/say"))


def test_stop_with_an_unknown_id_is_answered_not_found(door):
    door.send('{"text": "a", "id": "a"}')
    event = only_event(door.send('{"scope": "id", "id": "ghost"}', "stop", correlation_data=b"k"))
    assert (event.event, event.id, event.scope, event.correlation_data) == ("not_found", "ghost", "id", b"k")
    assert door.announcer.current.cut is None


def test_stop_of_the_id_being_spoken_cuts_it_and_is_answered_stopped(door):
    door.send('{"text": "a", "id": "speaking"}')
    event = only_event(door.send('{"scope": "id", "id": "speaking"}', "stop"))
    assert (event.event, event.id, event.cancelled) == ("stopped", "speaking", ())
    assert door.announcer.current.cut is Cut.STOP
    door.playback.end_tracks(NOW)
    assert [(e.event, e.id) for e in events_in(door.turn())] == [("cancelled", "speaking")]
    assert only_event(door.send('{"scope": "id", "id": "speaking"}', "stop")).event == "not_found"


def test_stop_all_lists_what_it_cancelled_and_cuts_what_plays(door):
    for ident in ("a", "b", "c"):
        door.send(f'{{"text": "{ident}", "id": "{ident}"}}')
    out = door.send("all", "stop", response_topic=f"{BASE}/reply/ops")
    assert [(e.event, e.id) for e in events_in(out)] == [
        ("cancelled", "b"),
        ("cancelled", "c"),
        ("stopped", None),
    ]
    assert events_in(out)[-1].cancelled == ("b", "c") and door.announcer.current.cut is Cut.STOP
    assert [r.event.event for r in replies(out)] == ["stopped"]  # b and c had no response topic of their own


def test_voice_set_is_checked_against_the_bundle_and_becomes_the_default(door):
    event = only_event(door.send("VIVIAN", "voice/set", correlation_data=b"v"))
    assert (event.event, event.voice, event.correlation_data) == ("voice_set", "vivian", b"v")
    assert door.announcer.lookahead.defaults.voice == "vivian"
    refused = only_event(door.send("darth", "voice/set"))
    assert refused.event == "rejected" and "unknown voice 'darth'" in refused.reason
    assert door.announcer.lookahead.defaults.voice == "vivian"


def test_home_assistant_births_are_throttled(door):
    published = [len(door.send("online", "homeassistant/status")) for _ in range(50)]
    assert published == [1] + [0] * 49
    door.now += DISCOVERY_MIN_INTERVAL_S
    assert len(door.send("online", "homeassistant/status")) == 1


def test_hermes_refusal_still_gets_say_finished_with_a_generated_id_and_an_error(door):
    out = door.send('{"text": "", "siteId": "default", "sessionId": "s1"}', "hermes/tts/say")
    event = only_event(out)
    (error,) = [m for m in out if isinstance(m, HermesError)]
    (finished,) = [m for m in out if isinstance(m, HermesSayFinished)]
    assert event.event == "rejected" and finished.id == event.id and len(finished.id) == 36
    assert (finished.session_id, finished.site_id, error.context) == ("s1", "default", event.id)


def test_hermes_garbage_for_another_site_is_not_answered(door):
    assert door.send('{"siteId": "garage", "text": 5}', "hermes/tts/say") == []


def test_hermes_cancel_and_expiry_end_with_say_finished(door):
    door.send('{"text": "playing", "id": "p"}')
    door.send('{"text": "hi", "id": "h1", "siteId": "default"}', "hermes/tts/say")
    door.send('{"text": "hi", "id": "h2", "siteId": "default"}', "hermes/tts/say", message_expiry=5)
    assert door.accepted()[1].chime == "none"  # dialogue replies play no announcement chime by default
    assert HermesSayFinished("h1", "default", None) in door.send('{"scope": "id", "id": "h1"}', "stop")
    door.now += 6
    out = door.turn()
    assert [(e.event, e.id) for e in events_in(out)] == [("expired", "h2")]
    assert HermesSayFinished("h2", "default", None) in out


def test_hermes_chime_can_be_switched_on(tmp_path):
    door = make(tmp_path, hermes_chime=True)
    door.send('{"text": "hi", "siteId": "default"}', "hermes/tts/say")
    assert door.accepted()[0].chime is None


def test_duplicate_memory_survives_a_restart_after_the_announcement_left_the_spool(tmp_path):
    first = make(tmp_path)
    first.send('{"text": "a", "id": "done-1"}')
    first.playback.end_tracks(NOW)  # played out
    assert [(e.event, e.id) for e in events_in(first.turn())] == [("finished", "done-1")]
    assert first.spool_files() == []
    again = make(tmp_path)
    replay_spool(again.announcer)
    assert again.send('{"text": "a", "id": "done-1"}', name="again") == [] and again.spool_files() == []
    assert again.acks == [("again", [])]


def spooled(door: MqttDoor, field: str) -> list:
    """`field` of every spooled announcement, in spool order."""
    directory = door.queue.spool.directory
    return [json.loads((directory / name).read_text())["announcement"][field] for name in door.spool_files()]


def test_a_redelivery_without_id_is_recognised_by_content_and_packet_id_but_a_fresh_repeat_is_not(tmp_path):
    first = make(tmp_path)
    first.send("doorbell", message_id=7)
    assert spooled(first, "message_id") == [7]
    restarted = make(tmp_path)  # killed after the spool write, before the ack: the broker sends it again
    replay_spool(restarted.announcer)
    assert restarted.send("doorbell", dup=True, message_id=7, name="dup") == []
    assert restarted.acks == [("dup", ["000000000001.json"])]  # dropped, and acknowledged this time
    assert only_event(restarted.send("doorbell", message_id=8)).event == "queued"
    assert only_event(restarted.send("doorbell ringing", dup=True, message_id=7)).event == "queued"
    assert spooled(restarted, "message_id") == [7, 8, 7]


def test_five_identical_messages_without_id_are_five_announcements_also_across_a_restart(tmp_path):
    """Issue 27 item 7: a burst of the same text is five messages (five packet ids), not one."""
    first = make(tmp_path)
    for packet in (1, 2, 3):
        assert only_event(first.send("No id here.", message_id=packet)).event == "queued"
    # The process dies with 1..3 spooled and unacknowledged, 4 and 5 delivered but not yet handled:
    # after the restart the broker sends all five again with the DUP flag.
    restarted = make(tmp_path)
    replay_spool(restarted.announcer)
    answers = [restarted.send("No id here.", dup=True, message_id=packet) for packet in (1, 2, 3, 4, 5)]
    assert [[e.event for e in events_in(a)] for a in answers] == [[], [], [], ["queued"], ["queued"]]
    assert spooled(restarted, "message_id") == [1, 2, 3, 4, 5]
    assert len(set(spooled(restarted, "id"))) == 5


def test_ids_and_texts_cannot_forge_log_lines(door, caplog):
    caplog.set_level(logging.DEBUG)
    door.send('{"id": "a\\nINFO fake", "text": "x\\nINFO fake"}')
    door.send('{"text": "x\\nINFO fake", "voice": "x\\nINFO fake"}')
    door.send('{"scope": "weird\\nINFO fake"}', "stop")
    door.send("dar\nINFO fake", "voice/set")
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
