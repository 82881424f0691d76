"""The pool's pure rules (appliance/mqtt/pool.py): records from the broker, the anchor, the gate."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt.pool import (
    AWAY,
    MEMBER,
    OFFLINE,
    MemberRecord,
    PoolGate,
    PoolMembers,
    PoolTopics,
    estimated_audio_s,
)  # fmt: skip


def record(site: str, state: str = MEMBER, client_id: str = "cid") -> bytes:
    return json.dumps({"site": site, "client_id": client_id, "state": state}).encode()


def test_topics_of_a_pool():
    topics = PoolTopics("g", "qwen3tts/pool")
    assert topics.shared == "$share/g/qwen3tts/pool/say"
    assert topics.site_of(topics.member("b-box")) == "b-box"
    assert (
        topics.site_of("qwen3tts/pool/members/g/b/c") is None and topics.site_of("qwen3tts/pool/say") is None
    )


def test_a_record_round_trips_and_a_bad_one_is_ignored():
    good = MemberRecord.parse("b", record("b", AWAY))
    assert good == MemberRecord("b", "cid", AWAY) and MemberRecord.parse("b", good.payload()) == good
    assert MemberRecord.parse("b", record("c")) is None  # its site is not its topic's
    assert MemberRecord.parse("b", record("b", "boss")) is None
    assert MemberRecord.parse("b", record("b", client_id="two words")) is None
    assert MemberRecord.parse("b", b"") is None and MemberRecord.parse("b", b"x" * 5000) is None


def test_a_rescued_record_names_its_rescuer_and_what_it_took_and_a_bad_list_is_ignored():
    taken = ("0123456789abcdef" * 2, "f" * 32)
    rescued = MemberRecord("b", "cid", "rescued", by="a", taken=taken)
    assert MemberRecord.parse("b", rescued.payload()) == rescued
    many = MemberRecord("b", "cid", "rescued", by="a", taken=tuple(f"{n:032x}" for n in range(100)))
    assert MemberRecord.parse("b", many.payload()).taken == many.taken[-64:]  # the newest, bounded

    def bad(**fields) -> bytes:
        return json.dumps({"site": "b", "client_id": "cid", "state": "rescued", **fields}).encode()

    assert MemberRecord.parse("b", bad(by="a", taken=["not hex" * 5])) is None
    assert MemberRecord.parse("b", bad(by="a", taken="f" * 32)) is None
    assert MemberRecord.parse("b", bad(by="a", taken=["F" * 32])) is None
    assert MemberRecord.parse("b", bad(by=7, taken=[])) is None


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_payload_gives_a_record_or_none(payload):
    parsed = MemberRecord.parse("b", payload)
    assert parsed is None or (parsed.site == "b" and parsed.state in (MEMBER, AWAY, OFFLINE, "rescued"))


def test_the_anchor_is_the_lowest_online_site_and_offline_members_are_to_rescue():
    members = PoolMembers("b")
    assert members.anchor() == "b"
    members.update("a", MemberRecord("a", "a-pool", MEMBER))
    members.update("c", MemberRecord("c", "c-pool", OFFLINE))
    assert members.anchor() == "a" and [r.site for r in members.offline()] == ["c"]
    members.update("a", MemberRecord("a", "a-pool", OFFLINE))  # the anchor died: b takes its place
    assert members.anchor() == "b" and [r.site for r in members.offline()] == ["a", "c"]


def ann(text: str, repeat: int = 1) -> Announcement:
    return Announcement(id="x", text=text, repeat=repeat, repeat_interval=2.0)


def test_the_gate_holds_at_max_waiting_and_is_behind_at_max_delay():
    gate = PoolGate(max_waiting=2, max_delay_s=10.0)
    assert gate.state() == "taking" and gate.wait_open(0)
    gate.update([ann("short")])
    assert gate.state() == "taking"
    gate.update([ann("short"), ann("short")])
    assert gate.state() == "holding" and not gate.wait_open(0)
    assert gate.update([ann("x" * 200)])  # ~14 s of speech: behind changed
    assert gate.state() == "behind" and gate.holding
    assert estimated_audio_s(ann("x" * 14, repeat=3)) == 3 * 1.0 + 2 * 2.0
