"""The synthesis pool's rules on a real mosquitto, with members that never finish speaking
(pool_member_runner.py).

A saturated member holds its share unacknowledged; a dead member's held share is rescued by the anchor
while what it had spooled waits for its restart; a member far behind leaves the round robin and comes
back; the anchor stays in it, so a pooled message always has a subscriber.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from mqtt_intake_runner import spooled
from pool_member_runner import POOL_BASE, PoolRunner

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

RUNNER = Path(__file__).resolve().parent / "pool_member_runner.py"
SAY = f"{POOL_BASE}/say"


class MemberProcess:
    """pool_member_runner.py as a subprocess the test can SIGKILL."""

    def __init__(self, broker, site: str, spool: Path, log_path: Path, group: str = "g",
                 *extra: str) -> None:  # fmt: skip
        args = [sys.executable, str(RUNNER), broker.host, str(broker.port), site, str(spool), group, *extra]
        with open(log_path, "a") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, env=os.environ)
        lines: list[str] = []

        def read_two() -> None:
            lines.extend(self.proc.stdout.readline().strip() for _ in "ab")

        reader = threading.Thread(target=read_two)
        reader.start()
        reader.join(30)
        if lines[-1:] != ["READY"]:
            self.kill()
            pytest.fail(f"pool member did not start: {lines}; log: {log_path.read_text()[-2000:]}")
        self.replayed: list[str] = json.loads(lines[0].removeprefix("REPLAYED "))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)


def queued(recorder) -> dict[str, list[str]]:
    """Site -> ids it queued (first `queued` events only), from every box's event topic."""
    out: dict[str, list[str]] = {}
    for m in recorder.messages:
        if m.topic.endswith("/event"):
            event = json.loads(m.payload)
            if event["event"] == "queued" and not event.get("reason"):
                out.setdefault(m.topic.split("/")[1], []).append(event["id"])
    return out


def pool_records(recorder, site: str) -> list[str | None]:
    """The states of `site`'s member records, in the order the broker passed them on."""
    return [json.loads(m.payload).get("state") for m in recorder.messages
            if m.topic == f"{POOL_BASE}/members/g/{site}" and m.payload]  # fmt: skip


def record_state(recorder, site: str) -> str | None:
    found = pool_records(recorder, site)
    return found[-1] if found else None


def records_sent(runner: PoolRunner) -> list[str]:
    """The states of the records `runner` publishes for itself from now on, as it hands them to paho."""
    sent: list[str] = []
    publish = runner.pool.link.publish_record

    def counted(record):
        if record.site == runner.pool.site:
            sent.append(record.state)
        return publish(record)

    runner.pool.link.publish_record = counted
    return sent


def started(recorder) -> set[str]:
    """Ids some box's event topic said `started` for."""
    events = (json.loads(m.payload) for m in recorder.messages if m.topic.endswith("/event"))
    return {e["id"] for e in events if e["event"] == "started"}


def acks_reached_the_broker(recorder, site: str) -> None:
    """Wait until the broker has every acknowledgement `site` sent on its pool connection so far.

    A foreign write to the member's record makes it say its record again on that same connection, after
    the PUBACKs it queued before; the broker handles one connection's packets in order.
    """
    topic = f"{POOL_BASE}/members/g/{site}"
    before = sum(1 for m in recorder.messages if m.topic == topic)
    recorder.publish(topic, "{}")  # not a record: the member answers with its own
    recorder.wait_for(lambda _: sum(1 for m in recorder.messages if m.topic == topic) >= before + 2, 10)


def say(recorder, ann_id: str, text: str = "Pooled notice.", topic: str = SAY) -> None:
    recorder.publish(topic, json.dumps({"id": ann_id, "text": text}))


def test_a_dead_members_held_share_goes_to_the_anchor_and_its_spooled_share_waits_for_its_restart(
    mosquitto, recorder_factory, tmp_path
):
    recorder = recorder_factory(mosquitto, ["qwen3tts/+/event", f"{POOL_BASE}/members/#"])
    anchor = PoolRunner(mosquitto.host, mosquitto.port, "a-box", tmp_path / "a-spool").start()
    member = MemberProcess(mosquitto, "b-box", tmp_path / "b-spool", tmp_path / "b.log")
    try:
        recorder.wait_for(lambda _: record_state(recorder, "b-box") == "member", 10)
        ids = [f"p{n}" for n in range(10)]
        for ann_id in ids:
            say(recorder, ann_id)
        # each takes one to play and pool_max_waiting (2) to wait; the rest of its share it holds
        recorder.wait_for(lambda _: sorted(map(len, queued(recorder).values())) == [3, 3], 10)
        b_spooled = [a["id"] for a in spooled(tmp_path / "b-spool")]
        assert len(b_spooled) == 3
        # killed once its acks are at the broker; one killed between its spool write and its PUBACK is
        # spoken twice (by the rescuer and by itself on restart): docs/operations.md, "A synthesis pool"
        acks_reached_the_broker(recorder, "b-box")
        member.kill()
        # the anchor takes over b's session: what b held (never acknowledged) is queued at a, at once
        recorder.wait_for(lambda _: len(queued(recorder).get("a-box", [])) == 5, 15)
        recorder.wait_for(lambda _: record_state(recorder, "b-box") == "rescued", 10)
        member = MemberProcess(mosquitto, "b-box", tmp_path / "b-spool", tmp_path / "b.log")
        assert sorted(member.replayed) == sorted(b_spooled)  # b's spooled share is b's after the restart
        anchor.settle(recorder)
        at_a = queued(recorder).get("a-box", [])
        # a still holds 2 of its own share; the 8 others are queued once each, at a or in b's spool
        assert not set(at_a) & set(b_spooled)
        assert Counter(at_a + b_spooled + [i for i in ids if i not in at_a + b_spooled]) == Counter(ids)
        assert len(set(at_a) | set(b_spooled)) == 8
        assert queued(recorder).get("b-box", []) == b_spooled  # the restarted b got nothing again
    finally:
        member.kill()
        anchor.stop()


@pytest.mark.parametrize("with_ids", [True, False], ids=["ids", "id-less"])
def test_a_member_killed_between_its_spool_write_and_its_acknowledgement_is_not_spoken_twice(
    mosquitto, recorder_factory, tmp_path, with_ids
):
    """The window on purpose: b spools its share but withholds every PUBACK, and is SIGKILLed so. The
    anchor's rescue takes that share (redelivered) and lists it in b's `rescued` record; b drops it
    from its spool before replaying it. Id-less says get another id at each box: the list matches
    content and packet id."""
    recorder = recorder_factory(mosquitto, ["qwen3tts/+/event", f"{POOL_BASE}/members/#"])
    anchor = PoolRunner(mosquitto.host, mosquitto.port, "a-box", tmp_path / "a-spool").start()
    member = MemberProcess(mosquitto, "b-box", tmp_path / "b-spool", tmp_path / "b.log", "g", "withhold-acks")
    try:
        recorder.wait_for(lambda _: record_state(recorder, "b-box") == "member", 10)
        texts = [f"Pooled notice {n}." for n in range(4)]
        for n, text in enumerate(texts):
            recorder.publish(SAY, json.dumps({"id": f"w{n}", "text": text} if with_ids else {"text": text}))
        recorder.wait_for(lambda _: sum(map(len, queued(recorder).values())) == 4, 10)
        b_spooled = [a["text"] for a in spooled(tmp_path / "b-spool")]
        assert b_spooled, queued(recorder)  # the round robin gave b its share, spooled and unacknowledged
        member.kill()
        recorder.wait_for(lambda _: record_state(recorder, "b-box") == "rescued", 15)
        member = MemberProcess(mosquitto, "b-box", tmp_path / "b-spool", tmp_path / "b.log")
        anchor.settle(recorder)
        assert member.replayed == [] and spooled(tmp_path / "b-spool") == []  # b, back, dropped its share
        assert (tmp_path / "b.log").read_text().count("taken over by a-box") == len(b_spooled)
        at_a = [a["text"] for a in spooled(tmp_path / "a-spool")]  # nothing finishes: every one stays
        assert Counter(at_a) == Counter(texts)  # a has its own share and b's: none lost, none twice
        assert len(queued(recorder).get("b-box", [])) == len(b_spooled)  # b queued only its first share
    finally:
        member.kill()
        anchor.stop()


def publish_code(broker, topic: str, payload: str) -> int:
    """QoS 1 publish with a plain paho client; the PUBACK reason code (16: no matching subscribers)."""
    codes: list[int] = []
    done = threading.Event()
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    client.on_publish = lambda c, u, mid, rc, p: (codes.append(rc.value), done.set())
    client.connect(broker.host, broker.port)
    client.loop_start()
    client.publish(topic, payload, qos=1)
    assert done.wait(5)
    client.disconnect()
    client.loop_stop()
    return codes[0]


LONG = "A long announcement for the platform that keeps this box busy for a good while. " * 2


def test_a_member_far_behind_leaves_the_round_robin_and_the_anchor_never_does(
    mosquitto, recorder_factory, tmp_path
):
    recorder = recorder_factory(mosquitto, ["qwen3tts/+/event", f"{POOL_BASE}/members/#"])
    a = PoolRunner(mosquitto.host, mosquitto.port, "a-box", tmp_path / "a", max_waiting=5, max_delay=5)
    b = PoolRunner(mosquitto.host, mosquitto.port, "b-box", tmp_path / "b", max_waiting=5, max_delay=5)
    b_records = records_sent(b)
    a.start(), b.start()
    try:
        say(recorder, "b-own-1", LONG, "qwen3tts/b-box/say")  # plays (for good)
        say(recorder, "b-own-2", LONG, "qwen3tts/b-box/say")  # waits: ~12 s of audio ahead > 5 s
        recorder.wait_for(lambda _: "b-own-1" in started(recorder)
                          and queued(recorder).get("b-box") == ["b-own-1", "b-own-2"], 10)  # fmt: skip
        # b-own-1 may wait for a moment, alone, before it starts, and b leave and rejoin meanwhile: wait
        # until b's announcer has set the gate from its last event (settle), then until every record b
        # sent by then, each after its (un)subscribe on the same connection, has reached the broker
        b.settle(recorder)
        sent = len(b_records)
        recorder.wait_for(lambda _: len(pool_records(recorder, "b-box")) >= sent, 10)
        assert record_state(recorder, "b-box") == "away"
        for n in range(4):
            say(recorder, f"p{n}")
        recorder.wait_for(lambda _: len(queued(recorder).get("a-box", [])) == 4, 10)
        assert sorted(queued(recorder).get("a-box", [])) == ["p0", "p1", "p2", "p3"]
        assert queued(recorder).get("b-box", []) == ["b-own-1", "b-own-2"]
        # the anchor far behind too: it stays, so the broker still has a member to give the message to
        say(recorder, "a-own-1", LONG, "qwen3tts/a-box/say")
        recorder.wait_for(lambda _: "a-own-1" in queued(recorder).get("a-box", []), 10)
        assert record_state(recorder, "a-box") == "member"
        assert publish_code(mosquitto, SAY, json.dumps({"id": "p4", "text": "Still taken."})) == 0
        # b catches up (its waiting one cancelled): it joins again and gets its share
        recorder.publish("qwen3tts/b-box/stop", json.dumps({"scope": "id", "id": "b-own-2"}))
        recorder.wait_for(lambda _: record_state(recorder, "b-box") == "member", 10)
        for n in range(5, 9):
            say(recorder, f"p{n}")
        recorder.wait_for(lambda _: any(i.startswith("p") for i in queued(recorder).get("b-box", [])), 10)
    finally:
        b.stop()
        a.stop()


def test_a_pooled_announcement_held_past_its_message_expiry_is_expired_not_spoken(
    mosquitto, recorder_factory, tmp_path
):
    recorder = recorder_factory(mosquitto, ["qwen3tts/+/event", f"{POOL_BASE}/members/#"])
    box = PoolRunner(mosquitto.host, mosquitto.port, "a-box", tmp_path / "a", max_waiting=1).start()
    try:
        say(recorder, "plays")  # plays for good
        say(recorder, "waits")  # one waits: the gate holds the next
        recorder.wait_for(lambda _: queued(recorder).get("a-box") == ["plays", "waits"], 10)
        body = json.dumps({"id": "late", "text": "Too late by now."})
        recorder.publish(SAY, body, MessageExpiryInterval=1)
        timely = json.dumps({"id": "timely", "text": "Still in time."})
        recorder.publish(SAY, timely, MessageExpiryInterval=600)
        # held past its expiry: once the gate opens it is taken with no time left and never queued
        threading.Event().wait(2.5)  # the 1 s expiry passes while the gate holds: time itself is the input
        recorder.publish("qwen3tts/a-box/stop", json.dumps({"scope": "id", "id": "waits"}))
        recorder.wait_for(lambda _: "timely" in queued(recorder).get("a-box", []), 10)
        late = [json.loads(m.payload) for m in recorder.messages
                if m.topic.endswith("/event") and json.loads(m.payload).get("id") == "late"]  # fmt: skip
        assert late and late[-1]["event"] == "expired" and "late" not in queued(recorder).get("a-box", [])
    finally:
        box.stop()
