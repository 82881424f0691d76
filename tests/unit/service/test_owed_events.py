"""The last event of a spooled announcement outlives a crash (service/owed_events.py): built and kept on
disk before the spool forgets the announcement, sent again byte for byte at the next start until the
broker acknowledged it, and the spool file of an announcement that ended is never replayed.

The crash is the real gap: the announcer ends an announcement (its spool file goes) and the process dies
before its event reached the broker; here the event's publisher is simply never called."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from types import SimpleNamespace

import paho.mqtt.client as paho
from announcer_fakes import TurnRig
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.spool import Spool
from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.service.outbox import Outbox
from qwen3tts.service.owed_events import FILE_NAME, OwedEvents, _acknowledged

BASE = "qwen3tts/box"


class Info:
    """paho's MQTTMessageInfo as far as the outbox reads it."""

    def __init__(self) -> None:
        self.acked = False

    def is_published(self) -> bool:
        return self.acked


class Door:
    """The MQTT door: records what is published (topic, payload, properties) and its infos."""

    def __init__(self) -> None:
        self.client = SimpleNamespace(topics=SimpleNamespace(base=BASE))
        self.sent: list[tuple[str, bytes, object]] = []
        self.infos: list[Info] = []

    def publish(self, message) -> Info:
        self.sent.append((message.topic(BASE), message.payload(), message.meta()))
        self.infos.append(Info())
        return self.infos[-1]

    def events(self) -> list[dict]:
        return [json.loads(payload) for topic, payload, _ in self.sent if topic == f"{BASE}/event"]


def wired(rig: TurnRig, door: Door) -> Outbox:
    """The service's wiring: the announcer's ends are owed through an outbox on the rig's spool."""
    outbox = Outbox(lambda: door)
    outbox.owed = OwedEvents(rig.settings.announcements.spool_dir)
    rig.announcer.reporter.on_ending = outbox.owe
    return outbox


def test_an_end_the_process_did_not_live_to_send_is_sent_at_the_next_start_and_not_replayed(tmp_path):
    rig, dead = TurnRig(tmp_path), Door()
    wired(rig, dead)  # the events themselves go to the rig's recorder only: none reaches `dead`
    rig.say("a1", "Platform two.", response_topic=f"{BASE}/reply/x", correlation_data=b"\x01\x02")
    rig.run_until_event("a1", "finished")
    assert rig.spooled() == [] and dead.sent == []  # the spool forgot it; the broker never heard

    again, door = TurnRig(tmp_path), Door()
    outbox = wired(again, door)
    again.announcer.replay(ended=outbox.owed.ids())
    outbox.resend()
    [event] = door.events()
    assert (event["event"], event["id"]) == ("finished", "a1")
    [(_, payload, meta)] = [s for s in door.sent if s[0] == f"{BASE}/reply/x"]  # its reply too
    assert json.loads(payload)["event"] == "finished" and meta.correlation_data == b"\x01\x02"
    assert again.queue.ids() == [] and again.events() == []  # nothing replayed, no second end said


def test_an_end_is_paid_once_the_broker_acknowledged_it_and_is_not_sent_again(tmp_path):
    rig, door = TurnRig(tmp_path), Door()
    outbox = wired(rig, door)
    rig.announcer.reporter.on_event = lambda ann, event, reason, warnings, **zones: outbox.announce(
        ann, event, reason, warnings, **zones
    )
    rig.say("a1", "Platform two.")
    rig.run(lambda: [e["event"] for e in door.events()][-1:] == ["finished"])
    outbox.settle()
    assert OwedEvents(rig.settings.announcements.spool_dir).ids() == {"a1"}  # not acknowledged yet
    for info in door.infos:
        info.acked = True
    outbox.settle()
    resent = Door()
    assert OwedEvents(rig.settings.announcements.spool_dir).resend(resent.publish) == 0
    assert resent.sent == []


def test_a_crash_before_the_spool_forgot_it_ends_it_at_the_next_start_without_playing_it(tmp_path):
    spool_dir = tmp_path / "spool"
    ann = Announcement(id="b1", text="Gate closes.", seq=4)
    Spool(spool_dir).write(ann)
    OwedEvents(spool_dir).owe("b1", announcement_events(ann, "finished"), BASE)  # then the process died

    rig, door = TurnRig(tmp_path), Door()
    outbox = wired(rig, door)
    rig.announcer.replay(ended=outbox.owed.ids())
    outbox.resend()
    assert rig.spooled() == [] and rig.queue.ids() == []
    assert [(e["event"], e["id"]) for e in door.events()] == [("finished", "b1")]


def test_the_resent_end_is_the_same_bytes_as_the_one_built(tmp_path):
    ann = Announcement(id="c1", text="x", seq=1, response_topic=f"{BASE}/reply/c", correlation_data=b"\xff")
    built = announcement_events(ann, "cancelled", "stop", now=1234.5)
    OwedEvents(tmp_path).owe("c1", built, BASE)
    door = Door()
    OwedEvents(tmp_path).resend(door.publish)
    assert [(t, p) for t, p, _ in door.sent] == [(m.topic(BASE), m.payload()) for m in built]
    assert [meta for _, _, meta in door.sent] == [m.meta() for m in built]


def test_a_torn_or_hostile_line_is_skipped_and_the_rest_still_owed(tmp_path, caplog):
    good = Announcement(id="d1", text="x", seq=1)
    OwedEvents(tmp_path).owe("d1", announcement_events(good, "expired"), BASE)
    with open(tmp_path / FILE_NAME, "a") as f:
        f.write('{"owe": 5, "messages": 3}\n["not", "an", "object"]\n')
        f.write('{"owe": "e1", "messages": [{"topic": ""}]}\n')
        f.write('{"owe": "f1", "messa')  # torn by the crash
    with caplog.at_level(logging.WARNING):
        assert OwedEvents(tmp_path).ids() == {"d1"}
    assert caplog.text.count("skipped") == 4


def test_a_disk_that_refuses_the_write_leaves_the_end_unowed_and_says_so_once(tmp_path, caplog):
    (tmp_path / FILE_NAME).mkdir()  # appending to it fails (IsADirectoryError)
    owed = OwedEvents(tmp_path)
    ann = Announcement(id="g1", text="x", seq=1)
    with caplog.at_level(logging.WARNING):
        sent = owed.owe("g1", announcement_events(ann, "finished"), BASE)
        owed.owe("g2", announcement_events(ann, "finished"), BASE)
    assert sent and owed.ids() == set()  # still published by the caller, owed nowhere
    assert caplog.text.count("cannot write") == 1


def test_paid_entries_are_compacted_away(tmp_path):
    owed = OwedEvents(tmp_path)
    for n in range(300):
        ann = Announcement(id=f"h{n}", text="x", seq=n + 1)
        owed.owe(ann.id, announcement_events(ann, "finished"), BASE)
        info = Info()
        info.acked = n != 7
        owed.sent(ann.id, [info, info])
        owed.settle()
    lines = (tmp_path / FILE_NAME).read_text().splitlines()
    assert len(lines) < 300 and OwedEvents(tmp_path).ids() == {"h7"}


def test_a_message_published_while_disconnected_is_paid_once_paho_had_it_acknowledged():
    """paho keeps it (rc "not connected") and sends it on connect; its is_published() raises meanwhile."""
    info = paho.MQTTMessageInfo(7)
    info.rc = paho.MQTT_ERR_NO_CONN
    assert not _acknowledged(info) and not _acknowledged(None)
    info._set_as_published()  # what paho does when the PUBACK arrives
    assert _acknowledged(info)
    full = paho.MQTTMessageInfo(8)
    full.rc = paho.MQTT_ERR_QUEUE_SIZE  # never sent: owed until the next start
    assert not _acknowledged(full)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_LINE = (
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" "))
    | _JSON.map(lambda v: json.dumps(v).encode())
    | st.fixed_dictionaries({"owe": _JSON, "messages": _JSON}).map(lambda v: json.dumps(v).encode())
    | st.fixed_dictionaries({"paid": _JSON}).map(lambda v: json.dumps(v).encode())
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=8))
def test_whatever_the_file_holds_a_start_reads_it_without_raising_and_keeps_the_valid_entries(lines):
    """The file is the daemon's own, but a start must not stop on it: hostile lines are skipped."""
    good = Announcement(id="v1", text="x", seq=1)
    with tempfile.TemporaryDirectory() as tmp:
        OwedEvents(Path(tmp)).owe("v1", announcement_events(good, "finished"), BASE)
        with open(Path(tmp) / FILE_NAME, "ab") as f:
            f.write(b"\n".join(lines) + b"\n")
        owed = OwedEvents(Path(tmp))
        door = Door()
        owed.resend(door.publish)
        paid_later = any(b'"paid": "v1"' in line for line in lines)
        owed_again = any(b'"owe": "v1"' in line for line in lines)
        assert ("v1" in owed.ids()) or paid_later or owed_again
        assert all(isinstance(payload, bytes) for _, payload, _ in door.sent)
