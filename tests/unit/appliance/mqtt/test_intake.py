"""The intake handing over to the real announcer: validate -> hand over -> spool (fsync) -> ack -> answer.

No broker and no threads: each message goes through `Intake.handle()`, then one `Announcer.turn()`
applies the hand-over (tests/support/mqtt_door.py). Nothing is synthesised, so the first accepted
announcement becomes the playing one and the others wait in the queue.
"""

from __future__ import annotations

import pytest
from mqtt_door import NOW, MqttDoor, events_in, only_event, policy_for, replay_spool

from qwen3tts.appliance.announcements.announcement import Cut
from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.appliance.mqtt.events import DiscoveryConfig, Reply
from qwen3tts.appliance.mqtt.hermes import HermesError, HermesSayFinished
from qwen3tts.appliance.mqtt.validate import check_size
from qwen3tts.errors import RequestError

STOP_BUTTON = DiscoveryConfig("button", "n", "stop", {"name": "Stop"})


def make(tmp_path, **kw) -> MqttDoor:
    kw.setdefault("policy", policy_for(("ryan",), ("english",)))
    return MqttDoor(tmp_path, discovery=lambda: [STOP_BUTTON], **kw)


@pytest.fixture
def door(tmp_path):
    return make(tmp_path, max_queue=3)


def test_the_intake_hands_a_say_over_and_the_announcer_acknowledges_it_once_spooled(door):
    door.intake.handle(door.inbound('{"text": "hello", "id": "a"}', name="t1"))
    assert door.acks == [] and door.spool_files() == [] and door.published == []  # not yet the announcer's
    (event,) = events_in(door.turn())
    assert door.acks == [("t1", ["000000000001.json"])]  # the file existed when the ack went out
    assert (event.event, event.id) == ("queued", "a") and [a.id for a in door.accepted()] == ["a"]


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
def test_invalid_say_is_acknowledged_and_rejected_with_the_reason(door, payload, reason):
    event = only_event(door.send(payload, name="t"))
    assert event.event == "rejected" and event.reason.startswith(reason)
    assert door.acks == [("t", [])] and door.spool_files() == [] and door.accepted() == []


def test_known_voice_and_language_match_case_insensitively_and_auto_is_always_known(door):
    assert only_event(door.send('{"text": "a", "voice": "Ryan", "lang": "auto"}')).event == "queued"
    assert door.accepted()[0].voice == "ryan"


@pytest.mark.parametrize("topic", ["say", "stop", "volume/set", "voice/set"])
def test_retained_commands_are_refused_and_not_obeyed(door, topic):
    door.send('{"text": "playing", "id": "p"}')
    payload = {"say": '{"text": "old news", "id": "old"}', "stop": '{"scope": "all", "id": "old"}',
               "volume/set": '{"volume": 0.1, "id": "old"}', "voice/set": "ryan"}[topic]  # fmt: skip
    event = only_event(door.send(payload, topic, retain=True, name="t"))
    assert event.event == "rejected" and "retained" in event.reason
    assert event.id == (None if topic == "voice/set" else "old")
    assert ("t", ["000000000001.json"]) in door.acks and door.spool_files() == ["000000000001.json"]
    assert door.playing_id() == "p" and door.announcer.current.cut is None and door.announcer.volume == 1.0


def test_duplicate_id_is_dropped_even_after_a_restart(door, tmp_path):
    door.send('{"text": "a", "id": "d"}')
    assert door.send('{"text": "again", "id": "d"}', name="dup") == []
    assert door.acks[-1][0] == "dup"  # dropped, but acknowledged: the broker must not send it again
    restarted = make(tmp_path)
    replay_spool(restarted.announcer)
    assert restarted.queue.ids() == ["d"]
    assert restarted.send('{"text": "redelivered", "id": "d"}') == []
    assert restarted.spool_files() == ["000000000001.json"] and restarted.playing_id() == "d"


def test_the_earliest_of_ttl_expires_at_and_message_expiry_wins(door):
    door.send('{"text": "a", "id": "a", "ttl": 60, "expires_at": 1000030}', message_expiry=90)
    door.send('{"text": "b", "id": "b"}', message_expiry=10)
    assert [a.expires_at for a in door.accepted()] == [NOW + 30, NOW + 10]


def test_default_ttl_applies_only_when_the_request_gives_no_deadline(tmp_path):
    door = make(tmp_path, policy=policy_for(default_ttl=120.0))
    door.send('{"text": "a", "id": "a"}')
    door.send('{"text": "b", "id": "b", "expires_at": 2000000}')
    assert [a.expires_at for a in door.accepted()] == [NOW + 120, 2_000_000]


def test_already_expired_say_gets_an_expired_event_and_is_not_queued(door):
    event = only_event(door.send('{"text": "a", "id": "late", "expires_at": 5}', name="late"))
    assert (event.event, event.id) == ("expired", "late") and door.spool_files() == []
    assert door.acks == [("late", [])]


def test_a_waiting_announcement_whose_time_runs_out_is_expired_by_the_announcer(door):
    door.send('{"text": "playing", "id": "p"}')
    door.send('{"text": "soon stale", "id": "t1", "ttl": 5}')
    door.now += 6
    (event,) = events_in(door.turn())
    assert (event.event, event.id) == ("expired", "t1") and door.spool_files() == ["000000000001.json"]


def test_full_queue_rejects_and_the_refused_id_may_come_again(door):
    for i in range(4):  # q0 plays, q1..q3 wait
        door.send(f'{{"text": "x", "id": "q{i}"}}')
    refused = only_event(door.send('{"text": "x", "id": "q4"}', name="q4"))
    assert (refused.event, refused.id) == ("rejected", "q4")
    assert refused.reason == "queue full (3 announcements waiting)"
    assert door.acks[-1] == ("q4", [f"00000000000{i}.json" for i in range(1, 5)])
    door.send("all", "stop")
    assert only_event(door.send('{"text": "x", "id": "q4"}')).event == "queued"


def test_response_topic_gets_a_reply_with_the_correlation_data(door):
    topic = f"{door.base}/reply/me"
    event, reply = door.send('{"text": "a", "id": "r"}', response_topic=topic, correlation_data=b"c1")
    assert isinstance(reply, Reply) and reply.topic(door.base) == topic and reply.event == event
    assert event.event == "queued" and event.meta().correlation_data == b"c1"


def test_rejected_say_still_replies_to_the_response_topic(door):
    event, reply = door.send(b"\xff", response_topic=f"{door.base}/reply/x", correlation_data=b"c2")
    assert event.event == "rejected" and reply.event.correlation_data == b"c2"


def test_stop_id_cancels_a_waiting_entry_and_leaves_the_playing_one_alone(door):
    door.send('{"text": "a", "id": "a"}')
    door.send('{"text": "b", "id": "b"}')
    out = door.send('{"scope": "id", "id": "b"}', "stop")
    assert [(e.event, e.id) for e in events_in(out)] == [("cancelled", "b"), ("stopped", "b")]
    assert events_in(out)[-1].cancelled == ("b",) and door.spool_files() == ["000000000001.json"]
    assert door.playing_id() == "a" and door.announcer.current.cut is None


def test_stop_current_cuts_the_playing_one_which_ends_cancelled_and_volume_is_set(door):
    door.send('{"text": "a", "id": "a"}')
    stop = only_event(door.send("", "stop"))
    assert (stop.event, stop.scope, door.announcer.current.cut) == ("stopped", "current", Cut.STOP)
    door.playback.end_tracks(NOW)  # the audio thread ends the cut track
    (cancelled,) = events_in(door.turn())
    assert (cancelled.event, cancelled.id, door.spool_files()) == ("cancelled", "a", [])
    volume = only_event(door.send("0.5", "volume/set"))
    assert (volume.event, volume.volume, door.announcer.volume) == ("volume_set", 0.5, 0.5)
    assert only_event(door.send("7", "volume/set")).event == "rejected" and door.announcer.volume == 0.5


def test_home_assistant_online_republishes_discovery(door):
    assert [m.object_id for m in door.send("online", "homeassistant/status", name="ha")] == ["stop"]
    assert door.send("offline", "homeassistant/status") == [] and door.acks[0] == ("ha", [])


def test_hermes_say_is_filtered_by_site_and_answered_after_playback(door):
    assert door.send('{"text": "x", "siteId": "garage"}', "hermes/tts/say", name="other") == []
    assert door.acks == [("other", [])]
    door.send('{"text": "x", "id": "h", "siteId": "default", "sessionId": "s"}', "hermes/tts/say")
    (ann,) = door.accepted()
    assert announcement_events(ann, "finished", now=NOW)[-1] == HermesSayFinished("h", "default", "s")
    assert announcement_events(ann, "error", "boom", now=NOW)[-2:] == [
        HermesError("boom", "h", "default", "s"),
        HermesSayFinished(id="h", site_id="default", session_id="s"),
    ]


class BrokenPolicy:
    max_payload_bytes = 65536

    @property
    def max_text_chars(self):  # the first limit admitting a say reads
        raise RuntimeError("policy on fire")


def test_nothing_escapes_handle_an_unexpected_failure_is_an_error_event_and_acknowledged(door):
    good = door.intake.policy
    door.intake.policy = BrokenPolicy()
    event = only_event(door.send('{"text": "a"}', name="t"))
    assert (event.event, event.reason) == ("error", "RuntimeError: policy on fire")
    assert door.acks == [("t", [])]
    door.intake.policy = good
    assert only_event(door.send('{"text": "a", "id": "next"}')).event == "queued"


def test_a_say_the_queue_fails_on_unexpectedly_is_an_error_event_and_the_next_one_is_served(door):
    def broken_put(ann, redelivered=False):
        raise RuntimeError("disk on fire")

    put, door.queue.put = door.queue.put, broken_put
    event = only_event(door.send('{"text": "a", "id": "a"}', name="a"))
    assert (event.event, event.id, event.reason) == ("error", "a", "RuntimeError: disk on fire")
    assert door.acks == [("a", [])]
    door.queue.put = put
    assert only_event(door.send('{"text": "b", "id": "b"}')).event == "queued"


def test_spool_write_failure_is_an_error_event_not_an_acceptance(door):
    def full_disk(ann, redelivered=False):
        raise OSError(28, "No space left on device")

    door.queue.put = full_disk
    event = only_event(door.send('{"text": "a", "id": "a"}', name="a"))
    assert (event.event, event.id) == ("error", "a") and "spool write failed" in event.reason
    assert door.acks == [("a", [])] and door.accepted() == []


def test_size_errors_are_request_errors(door):
    with pytest.raises(RequestError, match=r"payload too large \(65537 bytes > 65536\)"):
        check_size(b"x" * 65537, door.intake.policy.max_payload_bytes)
