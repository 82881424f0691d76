"""The intake's side of Hermes satellites: a say for a satellite's siteId is for that satellite's zone only,
a say for our own siteId for every other zone, a playFinished goes to what waits for it (a bad one is
dropped, never answered), and getVoices is answered with the catalog's voices in the namespace asked."""

from __future__ import annotations

import json

from mqtt_door import MqttDoor, events_in, policy_for

from qwen3tts.appliance.mqtt.hermes import HermesVoices
from qwen3tts.appliance.mqtt.messages import Inbound
from qwen3tts.appliance.mqtt.topics import Topics

BASE = "qwen3tts/hall"
ZONES = ("default", "porch", "attic")


def door(tmp_path, finished: list | None = None) -> MqttDoor:
    topics = Topics(BASE, hermes=True, hermes_satellites=("porch", "attic"), zone_base="qwen3tts/zone",
                    zones=ZONES)  # fmt: skip
    front = MqttDoor(tmp_path, topics=topics, policy=policy_for(zones=ZONES), zones=ZONES)
    if finished is not None:
        front.intake.hermes.play_finished = lambda site, request: finished.append((site, request)) or True
    return front


def test_a_satellites_say_is_for_its_zone_and_our_own_for_every_zone_but_the_satellites(tmp_path):
    front = door(tmp_path)
    for site, ann_id in (("porch", "p1"), ("default", "d1")):
        payload = json.dumps({"text": "Hallo", "id": ann_id, "siteId": site})
        assert [e.event for e in events_in(front.send(payload, "hermes/tts/say"))] == ["queued"]
    zones = {ann.id: ann.zones for ann in front.accepted()}
    assert zones == {"p1": ("porch",), "d1": ("default",)}
    assert all(ann.hermes_site_id == {"p1": "porch", "d1": "default"}[ann.id] for ann in front.accepted())


def test_a_say_for_a_site_that_is_neither_ours_nor_a_satellite_is_ignored_or_refused(tmp_path):
    front = door(tmp_path)
    for site in ("garage", "porch/x", "porch/#", "+", "x" * 300, "\ud800"):
        out = front.send(json.dumps({"text": "Hallo", "siteId": site}), "hermes/tts/say")
        assert {e.event for e in events_in(out)} <= {"rejected"}, site
    assert front.send(json.dumps({"text": "Hallo", "siteId": "garage"}), "hermes/tts/say") == []
    assert front.accepted() == []


def test_play_finished_reaches_the_waiting_play_and_bad_ones_are_dropped_unanswered(tmp_path):
    finished: list = []
    front = door(tmp_path, finished)
    topic = "hermes/audioServer/porch/playFinished"
    assert front.send(b'{"id": "p1", "siteId": "porch"}', topic) == []
    huge = b'{"id": "' + b"x" * 5000 + b'"}'
    for bad in (b"{not json", huge, b'{"id": "a/b"}', b'{"id": "p2", "siteId": "attic"}', b"\xff\xfe", b"[]"):
        assert front.send(bad, topic) == []
    front.deliver(Inbound(topic, b'{"id": "old"}', retain=True))
    assert finished == [("porch", "p1")]


def test_get_voices_is_answered_in_the_namespace_it_came_on_for_our_sites_only(tmp_path):
    front = door(tmp_path)
    (answer,) = front.send(b'{"id": "v1", "siteId": "porch"}', "rhasspy/tts/getVoices")
    assert isinstance(answer, HermesVoices) and answer.topic(BASE) == "rhasspy/tts/voices"
    body = json.loads(answer.payload())
    assert [v["voiceId"] for v in body["voices"]] == ["ryan", "vivian"]  # mqtt_door's catalog
    assert (body["id"], body["siteId"]) == ("v1", "porch")
    (answer,) = front.send(b"", "hermes/tts/getVoices")
    assert answer.topic(BASE) == "hermes/tts/voices" and json.loads(answer.payload())["siteId"] == "default"
    assert front.send(b'{"siteId": "garage"}', "rhasspy/tts/getVoices") == []
    (refused,) = events_in(front.send(b'{"id": 5}', "rhasspy/tts/getVoices"))
    assert refused.event == "rejected" and "id" in refused.reason
