"""The door under hostile and sloppy input, against a real mosquitto (MQTT 5 and 3.1.1).

The runner (mqtt_intake_runner.py) runs the real intake and announcer workers; nothing is synthesised, so
the first announcement plays (its `started` event is left out of the answers) and the rest wait.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostile_corpus import ANSWERS, HERMES_SAY, payloads, topics
from hypothesis import HealthCheck, given, settings
from mqtt_door import policy_for
from mqtt_intake_runner import IntakeRunner, spooled

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

RUNNER_SCRIPT = Path(__file__).with_name("mqtt_intake_runner.py")
LATER_LIFE = {"queued", "started", "first_audio", "finished", "cancelled", "expired"}
"""Events that may follow an announcement's first `queued`: nothing here finishes, but a stop cancels it,
and an emergency that barges in makes it wait again (`queued` once more, with the reason)."""


def answers(recorder, base: str) -> list[dict]:
    return [
        e for m in recorder.on(f"{base}/event") for e in [json.loads(m.payload)] if e["event"] != "started"
    ]


def start_runner(mosquitto, tmp_path, site: str, protocol: str = "5", **kw) -> IntakeRunner:
    spool = tmp_path / f"spool-{site}"
    return IntakeRunner(mosquitto.host, mosquitto.port, site, spool, protocol=protocol,
                        policy=policy_for(languages=("english",)), hermes=True, **kw).start()  # fmt: skip


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_a_retained_say_published_while_running(mosquitto, recorder_factory, tmp_path, protocol):
    """MQTT 5 (Retain As Published) sees the retain flag and refuses it; 3.1.1 cannot (docs/mqtt.md)."""
    site = f"live-retained{protocol.replace('.', '')}"
    runner = start_runner(mosquitto, tmp_path, site, protocol)
    try:
        rec = recorder_factory(mosquitto, [f"{runner.base}/event"])
        rec.publish(f"{runner.base}/say", '{"text": "sticky", "id": "sticky"}', retain=True)
        (event,) = [e for e in (rec.wait_for(lambda ms: len(ms) >= 1) and answers(rec, runner.base))]
        if protocol == "5":
            assert (event["event"], event["id"]) == ("rejected", "sticky") and "retained" in event["reason"]
            assert runner.accepted() == []
        else:  # a 3.1.1 broker clears the retain flag on live delivery: the say is spoken
            assert (event["event"], [a.id for a in runner.accepted()]) == ("queued", ["sticky"])
    finally:
        runner.stop()


def test_a_retained_say_waiting_at_subscribe_on_311_is_refused(mosquitto, recorder_factory, tmp_path):
    rec = recorder_factory(mosquitto, ["qwen3tts/old311/event"])
    rec.publish("qwen3tts/old311/say", '{"text": "stale", "id": "stale"}', retain=True)
    runner = start_runner(mosquitto, tmp_path, "old311", "3.1.1")
    try:
        rec.wait_for(lambda ms: len(ms) >= 1)
        (event,) = answers(rec, runner.base)
        assert (event["event"], event["id"]) == ("rejected", "stale") and runner.accepted() == []
    finally:
        runner.stop()


def test_hostile_response_topics_get_nothing_and_do_not_stop_the_client(
    mosquitto, recorder_factory, tmp_path
):
    runner = start_runner(mosquitto, tmp_path, "kiosk")
    try:
        spy = recorder_factory(mosquitto, ["#"])
        for bad in ("qwen3tts/kiosk/reply/#", "qwen3tts/other/stop", "qwen3tts/kiosk/say", "+"):
            spy.publish(f"{runner.base}/say", json.dumps({"text": "hi"}), ResponseTopic=bad)
        spy.publish(
            f"{runner.base}/say", '{"text": "ok", "id": "ok"}', ResponseTopic=f"{runner.base}/reply/c1"
        )
        spy.wait_for(lambda ms: any(m.topic == f"{runner.base}/reply/c1" for m in ms))
        events = answers(spy, runner.base)
        assert [e["event"] for e in events] == ["queued"] * 5
        assert all(
            e["warnings"][0].startswith("response topic ") and "ignored" in e["warnings"][0]
            for e in events[:4]
        )
        assert spy.on("qwen3tts/other/stop") == [] and len(spy.on(f"{runner.base}/say")) == 5
        assert runner.client.connected
    finally:
        runner.stop()


def test_commands_are_answered(mosquitto, recorder_factory, tmp_path):
    runner = start_runner(mosquitto, tmp_path, "answers")
    try:
        rec = recorder_factory(mosquitto, [f"{runner.base}/event"])
        rec.publish(f"{runner.base}/stop", '{"scope": "id", "id": "ghost"}', CorrelationData=b"k1")
        rec.publish(f"{runner.base}/volume/set", "0.25")
        rec.publish(f"{runner.base}/voice/set", "Vivian")
        rec.publish(f"{runner.base}/stop", "all")
        rec.wait_for(lambda ms: len(ms) >= 4)
        got = [(e["event"], e.get("id"), e.get("volume"), e.get("voice")) for e in answers(rec, runner.base)]
        assert got == [
            ("not_found", "ghost", None, None),
            ("volume_set", None, 0.25, None),
            ("voice_set", None, None, "vivian"),
            ("stopped", None, None, None),
        ]
        assert rec.on(f"{runner.base}/event")[0].properties.CorrelationData == b"k1"
    finally:
        runner.stop()


def test_fifty_home_assistant_births_publish_discovery_once(mosquitto, recorder_factory, tmp_path):
    runner = start_runner(mosquitto, tmp_path, "births")
    try:
        watcher = recorder_factory(mosquitto, ["homeassistant/+/+/+/config", f"{runner.base}/event"])
        for _ in range(50):
            watcher.publish("homeassistant/status", "online", qos=0)
        runner.settle(watcher)  # the intake published the configs before it handed the settling stop over
        configs = [m for m in watcher.messages if m.topic.endswith("/config")]
        assert len(configs) == 8 and len({m.topic for m in configs}) == 8
    finally:
        runner.stop()


def test_a_redelivery_after_a_kill_inside_the_spool_window_is_not_spoken_twice(
    durable_mosquitto, recorder_factory, tmp_path
):
    broker, spool, base = durable_mosquitto, tmp_path / "spool", "qwen3tts/window"
    args = [sys.executable, str(RUNNER_SCRIPT), broker.host, str(broker.port), "window", str(spool)]
    env = {**os.environ, "QWEN3TTS_TEST_KILL_AFTER_SPOOL": "1"}
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert [first.stdout.readline().strip() for _ in range(2)] == ["REPLAYED []", "READY"]
    watcher = recorder_factory(broker, [f"{base}/event"])
    watcher.publish(f"{base}/say", "the doorbell rang")  # no id: the intake makes one up
    assert first.wait(10) == -9  # died after the spool write, before the ack
    assert len(list(spool.glob("*.json"))) == 1

    second = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        replayed = json.loads(second.stdout.readline().removeprefix("REPLAYED "))
        assert len(replayed) == 1 and second.stdout.readline().strip() == "READY"
        watcher.publish(f"{base}/say", '{"text": "sentinel", "id": "sentinel"}')
        watcher.wait_for(lambda ms: any(b"sentinel" in m.payload for m in ms))
        queued = [
            e["id"]
            for m in watcher.on(f"{base}/event")
            for e in [json.loads(m.payload)]
            if e["event"] == "queued"
        ]
        assert queued == ["sentinel"]  # the redelivered doorbell was recognised as the spooled one
        assert [a["text"] for a in spooled(spool)] == ["the doorbell rang", "sentinel"]
        assert spooled(spool)[0]["id"] == replayed[0]
    finally:
        second.terminate()
        _, stderr = second.communicate(timeout=10)
    assert "inbound DUP packet" in stderr  # the broker did deliver it again, flagged as a redelivery
    assert stderr.count("dropped, the broker's redelivery of a message already spooled") == 1


class _Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += bool(record.exc_info)


@pytest.fixture
def fuzz_rig(mosquitto, recorder_factory, tmp_path):
    runner = start_runner(mosquitto, tmp_path, "fuzz", max_queue=200)  # nothing ends here but by a stop
    rec = recorder_factory(mosquitto, [f"{runner.base}/event"])
    handler = _Tracebacks()
    logging.getLogger("qwen3tts").addHandler(handler)
    yield runner, rec, handler, iter(range(10**6))
    logging.getLogger("qwen3tts").removeHandler(handler)
    runner.stop()


def their_id(payload: bytes) -> str | None:
    try:
        return json.loads(payload.decode("utf-8")).get("id")
    except (ValueError, AttributeError):
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(topic=topics, payload=payloads)
def test_a_sample_of_the_hostile_corpus_through_mosquitto(fuzz_rig, topic, payload):
    """One documented answer each (or none: a Hermes say for another site, a say repeating an id); what
    else arrives meanwhile is the later life of announcements queued before (started, cancelled, queued
    again after a barge-in)."""
    runner, rec, tracebacks, counter = fuzz_rig
    sentinel = f"sentinel-{next(counter)}"
    before = len(rec.on(f"{runner.base}/event"))
    queued_before = {e.get("id") for e in all_events(rec, runner.base) if e["event"] == "queued"}
    rec.publish(HERMES_SAY if topic == HERMES_SAY else f"{runner.base}/{topic}", payload)
    rec.publish(f"{runner.base}/stop", json.dumps({"scope": "id", "id": sentinel}))
    rec.wait_for(lambda ms: any(sentinel.encode() in m.payload for m in ms), timeout=20)
    everything = all_events(rec, runner.base)
    assert "error" not in {e["event"] for e in everything}
    after = everything[before:]
    answer_to_sentinel = next(i for i, e in enumerate(after) if e.get("id") == sentinel)
    assert after[answer_to_sentinel]["event"] == "not_found"
    window = after[:answer_to_sentinel]  # what comes after it is looked at with the next example
    queued, answered = set(queued_before), []
    for event in window:  # in the order they came: an announcement's first `queued` is its answer
        if not (event["event"] in LATER_LIFE and event.get("id") in queued):
            answered.append(event)
        if event["event"] == "queued":
            queued.add(event.get("id"))
    if answered or topic not in ("say", HERMES_SAY):
        (answer,) = answered
        assert answer["event"] in ANSWERS[topic], window
    else:
        assert topic == HERMES_SAY or their_id(payload) in queued_before, window
    assert tracebacks.count == 0 and runner.client.connected


def all_events(recorder, base: str) -> list[dict]:
    return [json.loads(m.payload) for m in recorder.on(f"{base}/event")]


def test_the_client_thread_survives_and_serves_after_the_corpus(mosquitto, recorder_factory, tmp_path):
    runner = start_runner(mosquitto, tmp_path, "after")
    try:
        rec = recorder_factory(mosquitto, [f"{runner.base}/event"])
        for payload in (b"\xff" * 2_000_000, b"[" * 100_000, b'{"text": "\\ud800"}'):
            threading.Thread(target=rec.publish, args=(f"{runner.base}/stop", payload)).start()
        rec.wait_for(lambda ms: len(ms) >= 3, timeout=10)
        rec.publish(f"{runner.base}/say", '{"text": "fine", "id": "fine"}')
        rec.wait_for(lambda ms: any(b'"fine"' in m.payload for m in ms))
        assert [e["event"] for e in answers(rec, runner.base)] == ["rejected"] * 3 + ["queued"]
    finally:
        runner.stop()


def test_publishing_to_a_wildcard_is_dropped_not_fatal(mosquitto, recorder_factory, tmp_path):
    """Defence in depth behind topics.refusal(): paho raises on a wildcard publish topic."""
    from qwen3tts.appliance.mqtt.events import Event, Reply

    runner = start_runner(mosquitto, tmp_path, "wild")
    try:
        rec = recorder_factory(mosquitto, [f"{runner.base}/event"])
        assert runner.client.publish(Reply("a/#", Event("queued", "w"))) is None
        rec.publish(f"{runner.base}/say", '{"text": "still", "id": "still"}')
        rec.wait_for(lambda ms: any(b'"still"' in m.payload for m in ms))
    finally:
        runner.stop()
