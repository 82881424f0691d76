"""Every generated hostile payload gets exactly one documented answer, never an error or a traceback.

The real intake hands each message to the real announcer, which applies it in one turn
(tests/support/mqtt_door.py), so the answers are the daemon's own: a say (on `<base>/say` or on the
zone topic of the door's one zone, with hostile `zones` fields too) gets `queued`, `expired` or
`rejected`; a stop `stopped`, `not_found` or `rejected`; volume/set and voice/set `volume_set` /
`voice_set` or `rejected`; a Hermes say for another siteId gets nothing (docs/mqtt.md). The door also
speaks for the Hermes satellite `porch` (one of its zones): a playFinished is never answered, a getVoices
gets the voices, `rejected` or (another site) nothing. Afterwards the same door still queues a
valid announcement, and nothing it published fails to encode.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from hostile_corpus import (
    ANSWERS,
    GET_VOICES,
    HERMES_SAY,
    PLAY_FINISHED,
    SATELLITE,
    ZONE_SAY,
    nasty_strings,
    payloads,
    satellite_topics,
    topics,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mqtt_door import MqttDoor, events_in, policy_for

from qwen3tts.appliance.mqtt.events import Reply
from qwen3tts.appliance.mqtt.hermes import HermesSayFinished, HermesVoices
from qwen3tts.appliance.mqtt.messages import Message
from qwen3tts.appliance.mqtt.topics import Topics

BASE = "qwen3tts/hall"
ZONES = ("default", SATELLITE)
TOPICS = Topics(BASE, hermes=True, hermes_satellites=(SATELLITE,), zone_base="qwen3tts/zone", zones=ZONES)


class Tracebacks(logging.Handler):
    """Collects every log record that carries an exception (a traceback in the journal)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.exc_info:
            self.records.append(record)


def check_answer(topic: str, out: list[Message], correlation, response_topic, retain: bool) -> None:
    for message in out:
        message.payload()  # every answer must encode (no lone surrogate echoed back)
    events = events_in(out)
    assert "error" not in {e.event for e in events}, events
    if topic == PLAY_FINISHED:
        assert out == []  # a notification, never answered
        return
    if topic in GET_VOICES and not events:
        assert not retain and all(isinstance(m, HermesVoices) for m in out) and len(out) <= 1
        return
    finished = [m for m in out if isinstance(m, HermesSayFinished)]
    if topic == HERMES_SAY and not events:
        assert not finished  # another siteId: not ours to answer
        return
    (answer,) = events
    assert answer.event in ANSWERS.get(topic, {"rejected"}) and len(answer.reason) <= 400
    assert answer.correlation_data == correlation
    if topic == HERMES_SAY and answer.event != "queued":
        assert [f.id for f in finished] == [answer.id]
    if retain:
        assert answer.event == "rejected" and "retained" in answer.reason
    replies = [m for m in out if isinstance(m, Reply)]
    assert len(replies) == (response_topic == f"{BASE}/reply/ok")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topic=topics | st.just(ZONE_SAY) | satellite_topics,
    payload=payloads,
    correlation=st.none() | st.binary(max_size=8),
    response_topic=st.none() | nasty_strings | st.just(f"{BASE}/reply/ok"),
    retain=st.booleans(),
    dup=st.booleans(),
    message_id=st.none() | st.integers(min_value=1, max_value=65535),
    message_expiry=st.none() | st.integers(min_value=0, max_value=2**32 - 1),
)
def test_every_hostile_payload_gets_exactly_one_documented_answer(
    topic, payload, correlation, response_topic, retain, dup, message_id, message_expiry
):
    handler = Tracebacks()
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.DEBUG)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            door = MqttDoor(Path(tmp), topics=TOPICS, policy=policy_for(zones=ZONES), zones=ZONES)
            mqtt = {"correlation_data": correlation, "response_topic": response_topic, "retain": retain,
                    "dup": dup, "message_id": message_id, "message_expiry": message_expiry}  # fmt: skip
            out = door.send(payload, topic, name="hostile", **mqtt)
            check_answer(topic, out, correlation, response_topic, retain)
            assert [name for name, _ in door.acks] == ["hostile"]  # acknowledged once, whatever it was
            after = events_in(door.send(b'{"text": "still serving", "id": "after-fuzz"}', name="after"))
            assert [(e.event, e.id) for e in after] == [("queued", "after-fuzz")]
            assert "after-fuzz" in {door.playing_id(), *door.queue.ids()}
            assert not handler.records, [r.getMessage() for r in handler.records]
            assert all("\n" not in line for line in handler.lines)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
