"""The duplicate memory: ids and message fingerprints (content + MQTT packet id), bounded, persisted
beside the spool, compacted, and tolerant of a torn or unreadable file."""

from __future__ import annotations

import json
import logging

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.recent_ids import RecentIds, fingerprint
from qwen3tts.appliance.priority import Priority


def message(ann_id: str = "gen-1", text: str = "No id here.", **kw) -> Announcement:
    return Announcement(id=ann_id, text=text, **kw)


def test_the_fingerprint_is_the_content_and_the_packet_id_never_the_id_the_intake_gave():
    base = fingerprint(message("gen-1"), 7)
    assert fingerprint(message("gen-2"), 7) == base
    different = [
        fingerprint(message(), 8),
        fingerprint(message(), None),
        fingerprint(message(text="Other text."), 7),
        fingerprint(message(priority=Priority.EMERGENCY), 7),
        fingerprint(message(voice="anna"), 7),
        fingerprint(message(correlation_data=b"\x01"), 7),
        fingerprint(message(response_topic="reply"), 7),
        fingerprint(message(repeat=2), 7),
    ]
    assert base not in different and len(set(different)) == len(different)


def test_ids_and_redeliveries_are_remembered_across_a_restart(tmp_path):
    path = tmp_path / "recent-ids.jsonl"
    recent = RecentIds(10, path)
    recent.add("a", message("a"), message_id=5)
    recent.add("b")
    again = RecentIds(10, path)
    assert again.seen("a") and again.seen("b") and not again.seen("c")
    assert again.redelivered(message("gen-9", text=message("a").text), 5) == "a"
    assert again.redelivered(message("gen-9"), 6) is None


def test_the_window_forgets_the_oldest_and_the_file_is_compacted_at_twice_the_window(tmp_path):
    path = tmp_path / "recent-ids.jsonl"
    recent = RecentIds(3, path)
    for n in range(6):
        recent.add(f"id{n}", message(f"id{n}", text=f"text {n}"), message_id=n)
    assert [recent.seen(f"id{n}") for n in range(6)] == [False, False, False, True, True, True]
    assert len(path.read_text().splitlines()) == 6
    recent.add("id6", message("id6", text="text 6"), message_id=6)  # at 2 x 3 lines: rewritten first
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["id"] for e in lines] == ["id4", "id5", "id6"]  # the window, each once
    assert all(e["fp"] for e in lines)  # the fingerprints survive the compaction
    reloaded = RecentIds(3, path)
    assert [reloaded.seen(f"id{n}") for n in (3, 4, 5, 6)] == [False, True, True, True]
    assert reloaded.redelivered(message("x", text="text 5"), 5) == "id5"
    recent.add("id7")
    assert len(path.read_text().splitlines()) == 4  # appending again after the compaction


def test_a_torn_line_and_lines_of_the_wrong_shape_are_skipped(tmp_path):
    path = tmp_path / "recent-ids.jsonl"
    path.write_text(
        '{"id": "a", "fp": null}\n[1]\n{"id": 5}\n{"fp": "x"}\n{"id": "b", "fp": 3}\n{"id": "c", "f'
    )
    recent = RecentIds(10, path)
    assert recent.seen("a") and not recent.seen("b") and not recent.seen("c")


def test_an_unreadable_file_starts_empty_with_a_warning_and_a_failed_append_is_not_fatal(tmp_path, caplog):
    path = tmp_path / "recent-ids.jsonl"
    path.mkdir()  # reading a directory fails like an unreadable file
    with caplog.at_level(logging.WARNING, logger="qwen3tts.appliance.announcements.recent_ids"):
        recent = RecentIds(10, path)
        for n in range(5):
            recent.add(f"a{n}")
    assert recent.seen("a4")  # remembered in memory for this process
    messages = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("cannot read the duplicate memory") for m in messages) == 1, messages
    assert sum(m.startswith("cannot persist the duplicate memory") for m in messages) == 1, messages


def test_without_a_path_nothing_is_written(tmp_path):
    recent = RecentIds(10)
    recent.add("a", message("a"), message_id=1)
    assert recent.seen("a") and list(tmp_path.iterdir()) == []
