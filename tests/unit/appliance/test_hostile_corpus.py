"""Every generated hostile payload gets exactly one answer, never an error or a traceback.

The documented reactions (docs/mqtt.md): a say gets `queued`, `expired` or `rejected`; a stop
`stopped`, `not_found` or `rejected`; volume/set and voice/set `volume_set` / `voice_set` or
`rejected`; a Hermes say for another siteId gets nothing. Afterwards the same intake still
queues a valid announcement.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from hostile_corpus import HERMES_SAY, nasty_strings, payloads, topics
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen3tts.appliance.mqtt.events import Event, Reply
from qwen3tts.appliance.mqtt.hermes import HermesSayFinished
from qwen3tts.appliance.mqtt.intake import AnnouncementIntake, AnnouncementPolicy
from qwen3tts.appliance.mqtt.messages import Inbound, MqttMeta, Topics
from qwen3tts.appliance.announcements.queue import AnnouncementQueue

BASE = "qwen3tts/fuzz"
ANSWERS = {
    "say": {"queued", "expired", "rejected"},
    HERMES_SAY: {"queued", "expired", "rejected"},
    "stop": {"stopped", "not_found", "rejected"},
    "volume/set": {"volume_set", "rejected"},
    "voice/set": {"voice_set", "rejected"},
}


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


def make_intake(directory: Path) -> AnnouncementIntake:
    return AnnouncementIntake(
        AnnouncementQueue(directory / "spool"),
        AnnouncementPolicy(voices=("ryan", "vivian"), languages=("english",)),
        Topics(BASE, hermes=True),
        ack=lambda token: None,
        clock=lambda: 1_000_000.0,
    )


def send(intake: AnnouncementIntake, topic: str, payload: bytes, **meta):
    full = topic if topic == HERMES_SAY else f"{BASE}/{topic}"
    return intake.handle(Inbound(full, payload, MqttMeta(**meta), "tok"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topic=topics,
    payload=payloads,
    correlation=st.none() | st.binary(max_size=8),
    response_topic=st.none() | nasty_strings | st.just(f"{BASE}/reply/ok"),
    retain=st.booleans(),
    dup=st.booleans(),
)
def test_every_hostile_payload_gets_exactly_one_documented_answer(
    topic, payload, correlation, response_topic, retain, dup
):
    handler = Tracebacks()
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.DEBUG)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            intake = make_intake(Path(tmp))
            meta = {"correlation_data": correlation, "response_topic": response_topic, "retain": retain}
            result = send(intake, topic, payload, dup=dup, **meta)
            events = [m for m in result.publish if isinstance(m, Event)]
            for message in result.publish:
                message.payload()  # every answer must encode (no lone surrogate echoed back)
            assert not handler.records, [r.getMessage() for r in handler.records]
            assert all("\n" not in line for line in handler.lines)
            assert "error" not in {e.event for e in events}
            finished = [m for m in result.publish if isinstance(m, HermesSayFinished)]
            if topic == HERMES_SAY and not events:
                assert not finished  # another siteId: not ours to answer
            else:
                (answer,) = [e for e in events if e.event in ANSWERS[topic]]
                assert len(events) == 1 and len(answer.reason) <= 400
                assert answer.correlation_data == correlation
                if topic == HERMES_SAY and answer.event != "queued":
                    assert [f.id for f in finished] == [answer.id]
                if retain:
                    assert answer.event == "rejected" and "retained" in answer.reason
                replies = [m for m in result.publish if isinstance(m, Reply)]
                assert len(replies) == (response_topic == f"{BASE}/reply/ok")
            valid = send(intake, "say", b'{"text": "still serving", "id": "after-fuzz"}')
            assert valid.accepted is not None and valid.accepted.id == "after-fuzz"
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
