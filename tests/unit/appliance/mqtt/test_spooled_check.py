"""The spool is input too (issue 37 item 3): every entry read at start passes the validation of the door
that accepted it (spooled.py, through the door's own parser and policy); one that does not is
quarantined with its reason and one `error` event at start, and the valid ones beside it still play."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path

import pytest
from announcer_fakes import TurnRig
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.spool import MAX_FILE_BYTES, Spool, quarantined
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.pool_link import POOL_PACKET_BASE
from qwen3tts.appliance.mqtt.spooled import SpooledCheck
from qwen3tts.appliance.mqtt.topics import Topics

BASE = "qwen3tts/spooled"
GOOD = Announcement(id="good", text="This one is fine.", seq=1)


def spool_file(fields: dict, seq: int) -> bytes:
    entry = {**Announcement(id=f"bad-{seq}", text="Bad.", seq=seq).to_json(), **fields}
    return json.dumps({"version": 1, "announcement": entry}).encode()


def started(tmp_path: Path) -> TurnRig:
    """A rig whose announcer replayed its spool with the door's check, as the service does."""
    rig = TurnRig(tmp_path)
    rig.announcer.replay(check=SpooledCheck(AnnouncementPolicy(catalog=rig.catalog), Topics(BASE)))
    return rig


def terminal(rig: TurnRig) -> list[tuple[str, str, str]]:
    ends = ("finished", "error", "cancelled", "expired", "rejected")
    return [(e.id, e.event, e.reason) for e in rig.recorder.emitted if e.event in ends]


REFUSED = {
    "a 100,000-character text": ({"text": "x" * 100_000}, "payload too large"),
    "a text over the limit": ({"text": "y" * 2001}, "text too long"),
    "not_before 1e300": ({"not_before": 1e300}, "not_before is 1e+300 s ahead"),
    "an unknown voice": ({"voice": "nobody"}, "nobody"),
    "repeat 1000": ({"repeat": 1000}, "repeat must be between 1 and 10"),
    "volume 5": ({"volume": 5.0}, "volume must be between 0 and 1"),
    "a long repeat_interval": ({"repeat_interval": 1e9}, "repeat_interval must be"),
    "an unknown chime": ({"chime": "siren"}, "unknown chime"),
    "a wildcard response topic": ({"response_topic": "#"}, "response topic"),
    "a foreign response topic": ({"response_topic": "elsewhere/x"}, "not under"),
    "a seed out of range": ({"seed": 2**40}, "seed must be between"),
    "plays done": ({"plays_done": 3, "repeat": 3}, "it already played 3 of 3 times"),
    "a packet id out of range": ({"message_id": 10**9}, "not an MQTT (or pool) packet id"),
    "a packet id past the rescued range": ({"message_id": 3 * 2**16}, "not an MQTT (or pool) packet id"),
    "control characters": ({"text": "Bell\x07"}, "text"),
    "a long sessionId": ({"session_id": "s" * 300}, "sessionId"),
    # a JSON escape of a lone surrogate reads back as a str no bytes encode (stopped every start)
    "a lone surrogate in the text": ({"text": "a \ud800 b"}, "not valid Unicode text"),
    "a lone surrogate in the instruct": ({"instruct": "calm \udfff"}, "not valid Unicode text"),
}


@pytest.mark.parametrize("fields, reason", REFUSED.values(), ids=REFUSED.keys())
def test_an_entry_the_door_would_refuse_is_quarantined_with_its_reason_and_one_event(
    tmp_path, caplog, fields, reason
):
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).write(GOOD)
    (spool_dir / "000000000007.json").write_bytes(spool_file(fields, 7))
    rig = started(tmp_path)
    [(ann_id, event, said)] = terminal(rig)
    assert (ann_id, event) == ("bad-7", "error") and said.startswith("quarantined: the door would refuse it")
    assert reason in said, said
    assert "bad-7: quarantined (" in caplog.text  # the log line, with its id
    [moved] = quarantined(spool_dir)
    assert moved.name.startswith("000000000007.json.")
    rig.run_until_event("good", "finished")
    assert [e for e in terminal(rig) if e[0] == "bad-7"] == [(ann_id, event, said)]  # said once


UNREADABLE = {
    "wrong types": (spool_file({"attempts": "x", "repeat": [1]}, 7), "bad-7", "field"),
    "a huge file": (spool_file({"text": "z" * (MAX_FILE_BYTES + 1)}, 7), "", "larger than"),
    "an invalid id": (spool_file({"id": "no spaces please", "volume": "loud"}, 7), "", "field"),
    "not JSON": (b"{ not json", "", "JSONDecodeError"),
}


@pytest.mark.parametrize("content, ann_id, reason", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_entry_is_quarantined_with_an_event_naming_its_id_when_it_has_a_valid_one(
    tmp_path, content, ann_id, reason
):
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).write(GOOD)
    (spool_dir / "000000000007.json").write_bytes(content)
    rig = started(tmp_path)
    [(said_id, event, said)] = terminal(rig)
    assert (said_id, event) == (ann_id, "error") and reason in said, said
    assert said.startswith("quarantined: unreadable spool file 000000000007.json: ")
    assert len(quarantined(spool_dir)) == 1
    rig.run_until_event("good", "finished")


@pytest.mark.parametrize("message_id", [7, POOL_PACKET_BASE + 7, 2 * POOL_PACKET_BASE + 7],
                         ids=["own session", "pool session", "rescued session"])  # fmt: skip
def test_an_entry_with_any_packet_id_a_door_spools_plays(tmp_path, message_id):
    """The box's own session, its pool session and a rescued member's session each number their packets
    (pool_link.py): a rescuer restarted with rescued announcements in its spool speaks them."""
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).write(Announcement(id="rescued", text="Pooled notice.", seq=1, message_id=message_id))
    rig = started(tmp_path)
    rig.run_until_event("rescued", "finished")
    assert quarantined(spool_dir) == [] and terminal(rig) == [("rescued", "finished", "")]


def test_a_second_entry_with_the_same_id_is_quarantined_and_the_first_plays(tmp_path):
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).write(GOOD)
    (spool_dir / "000000000002.json").write_bytes(spool_file({"id": "good"}, 2))
    rig = started(tmp_path)
    assert terminal(rig) == [("good", "error", "quarantined: another spooled announcement has its id")]
    rig.run_until_event("good", "finished")
    assert rig.spooled() == []


def settle(rig: TurnRig) -> None:
    """Play until nothing waits or plays; the fake clock jumps to a repeat that waits for its time."""
    for _ in range(40):
        rig.run(lambda: not rig.announcer.plays.playing and not rig.queue.ordered(rig.clock()), limit=5000)
        waiting = rig.queue.waiting()
        if not waiting:
            return
        rig.clock.advance(max(0.0, min(ann.not_before for ann in waiting) - rig.clock()))
    raise AssertionError(f"still waiting: {rig.queue.ids()}")


# ---- a hostile corpus ----------------------------------------------------------------------------

FIELD_NAMES = [name for name in GOOD.to_json() if name not in ("seq",)] + ["colour"]
HOSTILE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40), st.just("x" * 3000),
    st.text(st.characters(blacklist_categories=()), max_size=8),  # lone surrogates too
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
).filter(lambda value: not (isinstance(value, str) and value.startswith("valid-")))  # fmt: skip
HOSTILE_ENTRY = st.one_of(
    st.dictionaries(st.sampled_from(FIELD_NAMES), HOSTILE_VALUES, min_size=1, max_size=3),
    st.binary(max_size=200).map(lambda raw: {"raw": raw}),
)
VALID_TEXT = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=60).filter(str.strip)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile=st.lists(HOSTILE_ENTRY, max_size=6), valid=st.lists(VALID_TEXT, min_size=1, max_size=3))
def test_over_a_hostile_spool_the_daemon_starts_answers_every_entry_once_and_plays_the_valid_ones(
    hostile, valid
):
    with tempfile.TemporaryDirectory() as directory:
        tmp_path = Path(directory)
        spool_dir = tmp_path / "spool"
        spool = Spool(spool_dir)
        for n, text in enumerate(valid, start=1):
            spool.write(Announcement(id=f"valid-{n}", text=text.strip(), seq=n))
        for n, fields in enumerate(hostile, start=100):
            raw = fields["raw"] if "raw" in fields else spool_file(fields, n)
            (spool_dir / f"{n:012d}.json").write_bytes(raw)
        rig = started(tmp_path)
        stopped = threading.Event()
        stopped.set()
        rig.announcer.run(stopped)  # the loop starts over it: no exception
        settle(rig)
        ends = [end for end in terminal(rig) if end[2] != "repeats later"]
        assert len(ends) == len(valid) + len(hostile), ends  # every entry answered, once
        for n in range(1, len(valid) + 1):
            assert [e[1] for e in ends if e[0] == f"valid-{n}"] == ["finished"]
        set_aside = [e for e in ends if e[1] == "error"]
        assert all(reason.startswith("quarantined: ") for _, _, reason in set_aside)
        assert len(quarantined(spool_dir)) == len(set_aside) and rig.spooled() == []
