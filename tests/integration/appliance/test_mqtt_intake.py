"""The MQTT door against a real mosquitto: what is accepted, rejected, ignored, ordered.

The runner (mqtt_intake_runner.py) runs the real intake and announcer workers; nothing is synthesised,
so the first announcement plays (waiting for speech) and the rest wait in the queue. Its `started`
event is the only one of an announcement's later life that shows up here, and is left out.
"""

from __future__ import annotations

import json
import time

import pytest
from mqtt_door import policy_for
from mqtt_intake_runner import IntakeRunner, spooled

from qwen3tts.appliance.priority import Priority


@pytest.fixture
def runner(mosquitto, tmp_path, request):
    site = request.node.name[:40].replace("[", "_").replace("]", "_")
    made = IntakeRunner(
        mosquitto.host, mosquitto.port, site, tmp_path / "spool", policy=policy_for(), hermes=True
    )
    made.start()
    yield made
    made.stop()


@pytest.fixture
def recorder(mosquitto, recorder_factory, runner):
    return recorder_factory(mosquitto, [f"{runner.base}/event", f"{runner.base}/reply/#", "hermes/#"])


def events(recorder, runner) -> list[dict]:
    got = [json.loads(m.payload) for m in recorder.on(f"{runner.base}/event")]
    return [e for e in got if e["event"] != "started"]


def wait_events(recorder, runner, count: int, timeout: float = 5.0) -> list[dict]:
    recorder.wait_for(lambda ms: len(events(recorder, runner)) >= count, timeout)
    return events(recorder, runner)


def say(recorder, runner, **fields) -> None:
    recorder.publish(f"{runner.base}/say", json.dumps(fields))


def test_plain_text_say_is_queued_with_a_generated_id(runner, recorder):
    recorder.publish(f"{runner.base}/say", "Der Zug fährt ein.")
    (event,) = wait_events(recorder, runner, 1)
    assert event["event"] == "queued"
    (ann,) = runner.accepted()
    assert ann.text == "Der Zug fährt ein." and ann.id == event["id"] and ann.priority is Priority.NORMAL
    assert runner.log.wait_until(
        lambda: (ann.id, "started", "") in runner.log.entries, 5
    )  # nothing else waited


def test_json_say_carries_every_field_into_the_announcement(runner, recorder):
    body = {
        "text": "Platform change",
        "id": "a1",
        "lang": "English",
        "voice": "vivian",
        "instruct": "calm",
        "priority": "priority",
        "volume": 0.4,
        "chime": "none",
        "repeat": 2,
        "repeat_interval": 3,
        "ttl": 60,
    }
    recorder.publish(f"{runner.base}/say", json.dumps(body))
    (event,) = wait_events(recorder, runner, 1)
    assert (event["event"], event["id"]) == ("queued", "a1")
    (ann,) = runner.accepted()
    assert (ann.id, ann.lang, ann.voice, ann.instruct, ann.priority) == (
        "a1",
        "english",
        "vivian",
        "calm",
        Priority.PRIORITY,
    )
    assert (ann.volume, ann.chime, ann.repeat, ann.repeat_interval) == (0.4, "none", 2, 3.0)
    assert ann.interrupt is True  # priority barges in unless told otherwise
    assert ann.expires_at == pytest.approx(time.time() + 60, abs=5)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"text": "unterminated', "malformed JSON"),
        (b"\xff\xfe not utf-8", "not valid UTF-8"),
        (b"x" * 1_000_000, "payload too large"),
        (b'{"text": "hi", "volume": "loud"}', "field 'volume' must be a number"),
        (b'{"text": "hi", "repeat": 1.5}', "field 'repeat' must be an integer"),
        (b'{"text": ["a"]}', "field 'text' must be a string"),
        (b'{"text": "hi", "voice": "darth"}', "unknown voice 'darth'"),
        (b'{"text": "hi", "lang": "klingon"}', "unknown language 'klingon'"),
        (b'{"text": "hi", "priority": "urgent"}', "unknown priority 'urgent'"),
        (b'{"text": "hi", "volume": 1.5}', "volume must be between 0 and 1"),
        (b'{"text": "   "}', "empty text"),
        (b'{"id": "no-text"}', "missing field 'text'"),
    ],
)
def test_invalid_say_becomes_a_rejected_event_and_the_client_keeps_serving(runner, recorder, payload, reason):
    recorder.publish(f"{runner.base}/say", payload)
    say(recorder, runner, text="still here", id="after")
    rejected, queued = wait_events(recorder, runner, 2)
    assert rejected["event"] == "rejected" and reason in rejected["reason"]
    assert queued == {**queued, "event": "queued", "id": "after"}
    assert [a.id for a in runner.accepted()] == ["after"] and [
        a["id"] for a in spooled(runner.queue.spool.directory)
    ] == ["after"]


def test_duplicate_ids_are_dropped(runner, recorder):
    for text in ("first", "second copy"):
        say(recorder, runner, text=text, id="same")
    say(recorder, runner, text="other", id="other")
    runner.settle(recorder)  # every answer to the three is out; the last one is the settling stop's
    assert [(e["event"], e.get("id")) for e in events(recorder, runner)][:-1] == [
        ("queued", "same"),
        ("queued", "other"),
    ]
    assert [a.text for a in runner.accepted()] == ["first", "other"]


def test_priority_order_is_emergency_then_priority_then_normal_fifo(runner, recorder):
    say(recorder, runner, text="blocker", id="playing", priority="emergency")  # plays: nothing barges in
    for ident, priority in [("n1", "normal"), ("p1", "priority"), ("n2", "normal"), ("e1", "emergency")]:
        say(recorder, runner, text=ident, id=ident, priority=priority)
    runner.wait_accepted(5)
    assert runner.log.wait_until(lambda: ("playing", "started", "") in runner.log.entries, 5)
    assert runner.queue.ids() == ["e1", "p1", "n1", "n2"]


def test_ttl_expiry_drops_the_waiting_announcement_and_past_deadlines_are_expired_at_once(runner, recorder):
    say(recorder, runner, text="blocker", id="playing")
    # a TTL far longer than the door takes to queue it (0.3 s once ran out before the queue on a loaded
    # machine), and nothing synthesised here ends "playing": t1 waits until its time runs out
    say(recorder, runner, text="soon stale", id="t1", ttl=3)
    say(recorder, runner, text="too late", id="t2", expires_at=1000.0)
    got = wait_events(recorder, runner, 4, timeout=60)
    assert [(e["event"], e["id"]) for e in got[:2]] == [("queued", "playing"), ("queued", "t1")]
    assert {(e["event"], e["id"], e["reason"]) for e in got[2:]} == {
        ("expired", "t2", "expired before it was queued"),
        ("expired", "t1", "time to live ran out before it could play"),  # the announcer expires what waits
    }
    assert [a["id"] for a in spooled(runner.queue.spool.directory)] == ["playing"]


def test_mqtt5_message_expiry_sets_the_deadline(runner, recorder):
    recorder.publish(f"{runner.base}/say", "doorbell", MessageExpiryInterval=30)
    wait_events(recorder, runner, 1)
    assert runner.accepted()[0].expires_at == pytest.approx(time.time() + 30, abs=3)


def test_response_topic_gets_the_events_with_the_correlation_data(runner, recorder):
    reply_topic = f"{runner.base}/reply/me"
    recorder.publish(
        f"{runner.base}/say",
        '{"text":"hi","id":"r1"}',
        ResponseTopic=reply_topic,
        CorrelationData=b"\x01corr",
    )
    recorder.wait_for(lambda ms: any(m.topic == reply_topic for m in ms))
    reply = recorder.on(reply_topic)[0]
    assert json.loads(reply.payload)["event"] == "queued"
    assert reply.properties.CorrelationData == b"\x01corr"
    event = recorder.on(f"{runner.base}/event")[0]
    assert event.properties.CorrelationData == b"\x01corr"


def test_stop_all_cancels_waiting_announcements_and_cuts_the_playing_one(runner, recorder):
    for ident in ("playing", "s1", "s2"):
        say(recorder, runner, text=ident, id=ident)
    runner.wait_accepted(3)
    recorder.publish(f"{runner.base}/stop", '{"scope": "all"}')
    got = wait_events(recorder, runner, 7)
    assert [(e["event"], e.get("id")) for e in got[3:]] == [
        ("cancelled", "s1"),
        ("cancelled", "s2"),
        ("stopped", None),
        ("cancelled", "playing"),  # once the audio thread ended its cut track
    ]
    assert got[5]["cancelled"] == ["s1", "s2"] and got[6]["reason"] == "stopped"
    assert runner.queue.ids() == [] and spooled(runner.queue.spool.directory) == []


def test_hermes_say_for_our_site_is_queued_and_other_sites_are_ignored(runner, recorder):
    recorder.publish("hermes/tts/say", json.dumps({"text": "elsewhere", "siteId": "garage", "id": "h0"}))
    recorder.publish("hermes/tts/say", json.dumps({"text": "hallo", "siteId": "default", "id": "h1"}))
    runner.settle(recorder)
    (event,) = [e for e in events(recorder, runner) if e["event"] != "not_found"]
    assert (event["event"], event["id"]) == ("queued", "h1")
    (ann,) = runner.accepted()
    assert ann.hermes_site_id == "default"


def test_home_assistant_birth_republishes_discovery(runner, mosquitto, recorder_factory):
    watcher = recorder_factory(mosquitto, ["homeassistant/+/+/+/config"])
    watcher.publish("homeassistant/status", "online", qos=0)
    got = watcher.wait_for(lambda ms: len(ms) >= 8)
    assert {m.topic.split("/")[1] for m in got} == {
        "notify",
        "button",
        "number",
        "select",
        "sensor",
        "binary_sensor",
    }
    assert all(json.loads(m.payload)["availability_topic"] == f"{runner.base}/availability" for m in got)


ZONES = ("platform-3", "concourse")


@pytest.fixture
def zoned(mosquitto, tmp_path, request):
    """A box with two zones; its zone topics are qwen3tts/zone/<zone>/say (no site in them)."""
    site = request.node.name[:40]
    made = IntakeRunner(mosquitto.host, mosquitto.port, site, tmp_path / "spool",
                        policy=policy_for(zones=ZONES), zones=ZONES)  # fmt: skip
    made.start()
    yield made
    made.stop()


def test_a_zone_topic_say_plays_only_in_its_zone_and_an_unknown_zone_is_rejected_naming_it(
    zoned, mosquitto, recorder_factory
):
    recorder = recorder_factory(mosquitto, [f"{zoned.base}/event"])
    recorder.publish("qwen3tts/zone/platform-3/say", json.dumps({"text": "Mind the gap", "id": "p3"}))
    recorder.publish("qwen3tts/zone/concourse/say", "The shop closes soon.")
    say(recorder, zoned, text="Far away", id="far", zones=["platform-9"])
    recorder.wait_for(lambda ms: sum(json.loads(m.payload)["event"] == "started" for m in ms) >= 2, 5)
    got = [json.loads(m.payload) for m in recorder.on(f"{zoned.base}/event")]
    by_event = {(e["id"], e["event"]): e for e in got}
    assert by_event["p3", "queued"]["zones"] == ["platform-3"]
    assert by_event["p3", "started"]["zones"] == ["platform-3"]  # not in the concourse ...
    (concourse,) = [e for e in got if e["event"] == "started" and e["id"] != "p3"]
    assert concourse["zones"] == ["concourse"]  # ... which plays its own at the same time
    rejected = by_event["far", "rejected"]
    assert "unknown zone 'platform-9'" in rejected["reason"] and "platform-3, concourse" in rejected["reason"]
    assert ("far", "queued") not in by_event
    playing = {play.id: play.zones for play in zoned.announcer.playing}
    assert playing == {"p3": ("platform-3",), concourse["id"]: ("concourse",)}
