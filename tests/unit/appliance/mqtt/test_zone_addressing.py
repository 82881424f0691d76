"""Announcements addressed to zones over MQTT: the `zones` field of a say and the zone topics
`<prefix>/zone/<zone>/say`, routed (routing.py), read and admitted
(validate.py) before the announcer plays them in those zones only."""

from __future__ import annotations

import json

import pytest
from mqtt_door import ZONE_SAY, MqttDoor, events_in, only_event, policy_for

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt.fields import MAX_ZONES
from qwen3tts.appliance.mqtt.messages import Inbound, Say
from qwen3tts.appliance.mqtt.routing import inbound_type, subscriptions
from qwen3tts.appliance.mqtt.say_reader import SayFields, admit, read_say, say_payload
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import read
from qwen3tts.errors import RequestError

NOW = 1_000_000.0
ZONES = ("platform-3", "concourse")
TOPICS = Topics("qwen3tts/hall", zone_base="qwen3tts/zone", zones=ZONES)


def say_json(**fields) -> SayFields:
    return read_say(json.dumps({"text": "Mind the gap", **fields}).encode())


def test_zones_are_read_in_order_without_repeats_and_round_trip_through_the_payload():
    say = say_json(zones=["platform-3", "concourse", "platform-3"])
    assert say["zones"] == ("platform-3", "concourse")
    assert json.loads(say_payload(say))["zones"] == ["platform-3", "concourse"]
    assert read_say(say_payload(say)) == say


def test_a_say_without_zones_is_an_all_call_and_its_payload_has_no_zones_field():
    say = say_json()
    assert say["zones"] == () and "zones" not in json.loads(say_payload(say))


@pytest.mark.parametrize(
    ("zones", "reason"),
    [
        ("platform-3", "field 'zones' must be a list, got str"),
        ({"platform-3": True}, "field 'zones' must be a list, got dict"),
        ([], "field 'zones' is empty"),
        (["platform-3", 3], "field 'zones': int is not a zone name"),
        ([None], "field 'zones': NoneType is not a zone name"),
        (["a/b"], "field 'zones': 'a/b' is not a zone name"),
        (["+"], "field 'zones': '+' is not a zone name"),
        (["x\n2"], "field 'zones': 'x\\n2' is not a zone name"),
        (["x" * 65], "is not a zone name (1-64 of"),
        (["z"] * (MAX_ZONES + 1), f"names {MAX_ZONES + 1} zones (at most {MAX_ZONES})"),
    ],
)
def test_hostile_zones_are_refused_with_a_reason_that_names_the_problem(zones, reason):
    with pytest.raises(RequestError) as err:
        say_json(zones=zones)
    assert reason in str(err.value)


def test_the_policy_refuses_a_zone_this_box_does_not_have_naming_it_and_passes_known_zones_on():
    policy = policy_for(zones=ZONES)
    with pytest.raises(RequestError) as err:
        admit(policy, NOW, **say_json(zones=["concourse", "platform-9"]))
    assert str(err.value) == "unknown zone 'platform-9'; this box has platform-3, concourse"
    ann = admit(policy, NOW, **say_json(zones=["concourse"]))
    assert ann.zones == ("concourse",)
    assert Announcement.from_json(ann.to_json()).zones == ("concourse",)  # spooled with its zones
    assert admit(policy, NOW, **say_json()).zones == ()  # all-call


def test_each_zone_of_the_box_has_its_say_topic_without_the_site_and_it_is_routed_to_say():
    subs = dict(subscriptions(TOPICS))
    assert subs["qwen3tts/zone/platform-3/say"] is True and subs["qwen3tts/zone/concourse/say"] is True
    assert inbound_type(TOPICS, "qwen3tts/zone/concourse/say") is Say
    assert inbound_type(TOPICS, "qwen3tts/zone/platform-9/say") is None  # not a zone of this box
    assert not any("zone" in topic for topic, _ in subscriptions(Topics("qwen3tts/hall")))


def test_a_message_on_a_zone_topic_is_for_that_zone_only():
    plain = read(TOPICS, Inbound("qwen3tts/zone/concourse/say", b"Mind the gap"))
    assert (plain["text"], plain["zones"]) == ("Mind the gap", ("concourse",))
    agreeing = read(TOPICS, Inbound("qwen3tts/zone/concourse/say", b'{"text": "x", "zones": ["concourse"]}'))
    assert agreeing["zones"] == ("concourse",)
    with pytest.raises(RequestError) as err:
        read(TOPICS, Inbound("qwen3tts/zone/concourse/say", b'{"text": "x", "zones": ["platform-3"]}'))
    assert "disagrees with the zone topic of 'concourse'" in str(err.value)


def test_through_the_intake_the_queued_event_names_the_zones_and_an_unknown_zone_is_rejected(tmp_path):
    door = MqttDoor(tmp_path)  # one zone, `default`, with its zone topic
    queued = only_event(door.send(b"Mind the gap", ZONE_SAY, name="zoned"))
    assert queued.event == "queued" and queued.zones == ("default",)
    (ann,) = door.accepted()
    assert ann.zones == ("default",)
    rejected = only_event(door.send(json.dumps({"text": "x", "id": "far", "zones": ["platform-9"]})))
    assert (rejected.event, rejected.id) == ("rejected", "far")
    assert "unknown zone 'platform-9'" in rejected.reason
    all_call = events_in(door.send(json.dumps({"text": "everyone", "id": "all"})))
    assert [(e.event, e.zones) for e in all_call] == [("queued", ())]
    assert [name for name, _ in door.acks] == ["zoned", "tok", "tok"]
