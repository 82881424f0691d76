"""The spool is as hostile as any other input (issue 27 item 4): every file is validated as a whole when
read, and a malformed one is moved to the quarantine with a log line; it never stops the start-up, nor
the announcements beside it."""

from __future__ import annotations

import json
import logging
import threading

import pytest
from announcer_fakes import TurnRig

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.announcements.spool import MAX_FILE_BYTES, Spool, quarantined
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.spooled import SpooledCheck
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.priority import Priority

GOOD = Announcement(id="good", text="This one is fine.", seq=1)


def spool_file(announcement: object, version: object = 1) -> bytes:
    return json.dumps({"version": version, "announcement": announcement}).encode()


def fields(**changes) -> bytes:
    """A spool file of announcement seq 7 with `changes` to a valid one's fields."""
    return spool_file({**Announcement(id="bad", text="Bad.", seq=7).to_json(), **changes})


DEEP = 100_000
HOSTILE = {
    "null": (b"null", "not a spool file"),
    "a number": (b"5", "not a spool file"),
    "a string": (b'"x"', "not a spool file"),
    "a list": (b"[1]", "not a spool file"),
    "another version": (spool_file(GOOD.to_json(), version=2), "not a spool file"),
    "announcement null": (spool_file(None), "must be a JSON object, got NoneType"),
    "announcement 5": (spool_file(5), "must be a JSON object, got int"),
    "announcement x": (spool_file("x"), "must be a JSON object, got str"),
    "announcement [1]": (spool_file([1]), "must be a JSON object, got list"),
    "attempts x": (fields(attempts="x"), "field 'attempts'"),
    "attempts true": (fields(attempts=True), "field 'attempts'"),
    "attempts negative": (fields(attempts=-1), "field 'attempts'"),
    "expires_at x": (fields(expires_at="x"), "field 'expires_at'"),
    "expires_at NaN": (fields(expires_at=float("nan")), "field 'expires_at'"),
    "not_before x": (fields(not_before="x"), "field 'not_before'"),
    "priority loud": (fields(priority="loud"), "field 'priority'"),
    "priority background": (fields(priority="background"), "field 'priority'"),
    "voice a list": (fields(voice=["ryan"]), "field 'voice'"),
    "correlation not hex": (fields(correlation_data="zz"), "non-hexadecimal"),
    "no text": (spool_file({"id": "bad", "seq": 7}), "field 'text'"),
    "id a number": (fields(id=7), "field 'id'"),
    "unknown keys": (fields(colour="red", __class__="x"), "unknown fields ['__class__', 'colour']"),
    "another seq": (fields(seq=8), "sequence 8 does not match the file name"),
    "not UTF-8": (b'{"version": 1, "announcement": "\xff"}', "UnicodeDecodeError"),
    "not JSON": (b"{ not json", "JSONDecodeError"),
    "deep nesting": (b"[" * DEEP + b"]" * DEEP, "RecursionError"),
    "deep nesting inside": (
        fields(text=0)[:-2] + b', "voice": ' + b"[" * DEEP + b"]" * DEEP + b"}}",
        "Recursion",
    ),
    "huge": (fields(text="x" * (MAX_FILE_BYTES + 1)), f"larger than {MAX_FILE_BYTES} bytes"),
}


@pytest.mark.parametrize("content, reason", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_malformed_spool_file_is_quarantined_with_a_log_line_and_the_good_one_replays(
    tmp_path, caplog, content, reason
):
    Spool(tmp_path).write(GOOD)
    (tmp_path / "000000000007.json").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="qwen3tts.appliance.announcements.spool"):
        replayed, expired = AnnouncementQueue(tmp_path).replay(now=0)
    assert [a.id for a in replayed] == ["good"] and expired == []
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("spool entry 000000000007.json is corrupt (") and reason in line, line
    [moved] = quarantined(tmp_path)
    assert moved.name.startswith("000000000007.json.") and moved.read_bytes() == content
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["000000000001.json"]
    assert [a.id for a in AnnouncementQueue(tmp_path).replay(now=0)[0]] == ["good"]  # and next time


def test_the_announcer_starts_over_a_spool_of_every_hostile_file_and_plays_the_good_one(tmp_path):
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).write(GOOD)
    for n, (content, _) in enumerate(HOSTILE.values(), start=100):
        (spool_dir / f"{n:012d}.json").write_bytes(content)
    rig = TurnRig(tmp_path)
    rig.announcer.replay(check=SpooledCheck(AnnouncementPolicy(catalog=rig.catalog), Topics("qwen3tts/t")))
    stopped = threading.Event()
    stopped.set()
    rig.announcer.run(stopped)  # the replay at start: no exception
    rig.run_until_event("good", "finished")
    assert [(e.id, e.event) for e in rig.recorder.emitted if e.id == "good"] == [
        ("good", "started"), ("good", "first_audio"), ("good", "finished")
    ]  # fmt: skip
    assert len(quarantined(spool_dir)) == len(HOSTILE)
    errors = [e for e in rig.recorder.emitted if e.id != "good"]  # one event each, at start
    assert len(errors) == len(HOSTILE) and {e.event for e in errors} == {"error"}
    assert all(e.reason.startswith("quarantined: unreadable spool file 0000000001") for e in errors)
    assert {e.id for e in errors} == {"", "bad"}  # the id it claims, when it is a valid one


def test_a_quarantine_that_cannot_be_written_leaves_the_file_and_still_starts(tmp_path, caplog, monkeypatch):
    Spool(tmp_path).write(GOOD)
    (tmp_path / "000000000007.json").write_bytes(b"null")

    def read_only(src, dst):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr("qwen3tts.appliance.announcements.spool.os.replace", read_only)
    with caplog.at_level(logging.WARNING, logger="qwen3tts.appliance.announcements.spool"):
        replayed, _ = AnnouncementQueue(tmp_path).replay(now=0)
    assert [a.id for a in replayed] == ["good"]
    assert "cannot move 000000000007.json to the quarantine: Read-only file system" in caplog.text
    assert (tmp_path / "000000000007.json").exists()


def test_every_spooled_field_survives_the_round_trip(tmp_path):
    original = Announcement(
        id="x", text="Platform 4.", priority=Priority.EMERGENCY, lang="english", voice="ryan",
        instruct="calm", volume=0.5, chime="none", interrupt=True, repeat=3, repeat_interval=2.5,
        expires_at=99.5,
        response_topic="reply/here", correlation_data=b"\x00\xff", hermes_site_id="kitchen", session_id="s",
        normalize=False, seed=42, cache=False, seq=4, message_id=65535, plays_done=1, not_before=12.0,
        cursor=2, attempts=1, t_queued=1.0,
    )  # fmt: skip
    spool = Spool(tmp_path)
    spool.write(original)
    [loaded] = spool.load()
    assert loaded.to_json() == original.to_json()
    assert loaded.priority is Priority.EMERGENCY and loaded.correlation_data == b"\x00\xff"


def test_leftovers_of_an_interrupted_write_are_removed_at_load(tmp_path):
    Spool(tmp_path).write(GOOD)
    (tmp_path / "000000000009.json.tmp").write_text("half written")
    assert [a.id for a in Spool(tmp_path).load()] == ["good"]
    assert not list(tmp_path.glob("*.tmp")) and quarantined(tmp_path) == []  # never acknowledged: not ours


def test_remove_of_a_file_that_is_gone_is_no_error(tmp_path):
    spool = Spool(tmp_path)
    spool.write(GOOD)
    spool.remove(GOOD)
    spool.remove(GOOD)
    assert spool.load() == []


def test_a_spool_file_of_an_earlier_version_with_the_last_play_s_times_still_reads(tmp_path):
    written = {**GOOD.to_json(), "t_started": 2.0, "t_first_audio": 3.0, "t_finished": None}
    (tmp_path / f"{GOOD.seq:012d}.json").write_text(json.dumps({"version": 1, "announcement": written}))
    [loaded] = Spool(tmp_path).load()
    assert loaded.to_json() == GOOD.to_json() and quarantined(tmp_path) == []
