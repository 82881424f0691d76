"""A flood through the real broker (issue 27 item 6): 5000 says get exactly one answer each, and no answer
is dropped — the intake stops reading while paho's outgoing queue is half full (mqtt/backlog.py), so the
flood waits at the broker instead of overflowing ours."""

from __future__ import annotations

import json
import logging
from collections import Counter

import pytest
from mosquitto_broker import Mosquitto
from mqtt_intake_runner import IntakeRunner

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

COUNT = int(__import__("os").environ.get("FLOOD_COUNT", "5000"))


@pytest.fixture
def broker(tmp_path):
    # the recorder must not lose events either: mosquitto's own per-client queue unbounded
    (tmp_path / "broker").mkdir()
    broker = Mosquitto(tmp_path / "broker", persistence=False, extra_config=("max_queued_messages 0",))
    broker.start()
    yield broker
    broker.stop()


ANSWERS = ("queued", "rejected")


def answers(captured) -> list[dict]:
    return [e for e in map(json.loads, (m.payload for m in captured)) if e["event"] in ANSWERS]


def test_every_message_of_a_flood_gets_one_answer_and_none_is_dropped(
    tmp_path, broker, recorder_factory, caplog
):
    spool = tmp_path / "spool"
    runner = IntakeRunner(broker.host, broker.port, "flood", spool, max_queued_messages=200)  # the least
    recorder = recorder_factory(broker, [f"{runner.base}/event"])
    with caplog.at_level(logging.INFO):
        runner.start()
        try:
            for n in range(COUNT):
                recorder.publish(f"{runner.base}/say", json.dumps({"id": f"f{n}", "text": "Flood."}))
            recorder.wait_for(lambda ms: len(answers(ms)) >= COUNT, timeout=600)
        finally:
            runner.stop()
    got = answers(recorder.on(f"{runner.base}/event"))
    per_id = Counter(e["id"] for e in got)
    assert len(per_id) == COUNT and set(per_id.values()) == {1}  # one answer for every message
    kinds = Counter(e["event"] for e in got)
    assert (kinds["queued"], kinds["rejected"]) == (101, COUNT - 101)  # 1 playing, 100 waiting, rest full
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]
