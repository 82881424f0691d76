"""The ledger of ended spool files (ended_ledger.py): what one process records the next one reads back;
the file is input like any other (a malformed one, another spool's, or bad entries are ignored with a
log line); a runtime directory that cannot be written is logged, never raised."""

from __future__ import annotations

import json
import logging

import pytest

from qwen3tts.appliance.announcements.ended_ledger import QUARANTINE, REMOVE, EndedLedger


def test_what_one_process_records_the_next_reads_back_until_it_is_forgotten(tmp_path):
    first = EndedLedger(tmp_path / "run", tmp_path / "spool")
    first.record("000000000001.json", "heard", REMOVE)
    first.record("000000000002.json", "set-aside", QUARANTINE)
    assert [p.name for p in (tmp_path / "run").iterdir()] == [first.path.name]  # no temp file left
    second = EndedLedger(tmp_path / "run", tmp_path / "spool")
    assert second.ended("000000000001.json") == ("heard", REMOVE)
    assert second.ended("000000000002.json") == ("set-aside", QUARANTINE)
    second.forget("000000000001.json")
    assert EndedLedger(tmp_path / "run", tmp_path / "spool").entries == {
        "000000000002.json": ("set-aside", QUARANTINE)
    }
    assert EndedLedger(tmp_path / "run", tmp_path / "other-spool").entries == {}  # its own file


HOSTILE = {
    "not json": b"{not json",
    "not utf-8": b"\xff\xfe",
    "a list": b"[]",
    "another version": json.dumps({"version": 2, "ended": {}}).encode(),
    "no table": b'{"version": 1, "spool_dir": "SPOOL"}',
    "too large": b" " * ((1 << 20) + 1),
}


@pytest.mark.parametrize("content", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_malformed_ledger_is_ignored_with_a_log_line(tmp_path, caplog, content):
    ledger = EndedLedger(tmp_path / "run", tmp_path / "spool")
    ledger.path.parent.mkdir()
    ledger.path.write_bytes(content.replace(b"SPOOL", ledger.spool_dir.encode()))
    with caplog.at_level(logging.ERROR):
        assert EndedLedger(tmp_path / "run", tmp_path / "spool").entries == {}
    assert "ignoring the ledger of ended spool files" in caplog.text


def test_a_ledger_of_another_spool_and_bad_entries_are_ignored_and_good_entries_kept(tmp_path, caplog):
    ledger = EndedLedger(tmp_path / "run", tmp_path / "spool")
    ledger.path.parent.mkdir()
    ended = {"000000000001.json": ["kept", REMOVE], "../etc/passwd": ["x", REMOVE],
             "000000000002.json": ["x", "burn"], "000000000003.json": [3, REMOVE],
             "000000000004.json": "x"}  # fmt: skip
    ledger.path.write_text(json.dumps({"version": 1, "spool_dir": ledger.spool_dir, "ended": ended}))
    with caplog.at_level(logging.ERROR):
        assert EndedLedger(tmp_path / "run", tmp_path / "spool").entries == {
            "000000000001.json": ("kept", REMOVE)
        }
    assert caplog.text.count("ignoring a malformed entry") == 4
    ledger.path.write_text(json.dumps({"version": 1, "spool_dir": "/elsewhere", "ended": ended}))
    assert EndedLedger(tmp_path / "run", tmp_path / "spool").entries == {}


def test_a_runtime_directory_that_cannot_be_written_is_logged_and_the_entry_kept_in_memory(tmp_path, caplog):
    (tmp_path / "run").write_text("a file where the directory should be")
    ledger = EndedLedger(tmp_path / "run", tmp_path / "spool")
    with caplog.at_level(logging.ERROR):
        ledger.record("000000000001.json", "heard", REMOVE)  # never raises: nothing more can be done
    assert "cannot write the ledger of ended spool files" in caplog.text
    assert ledger.ended("000000000001.json") == ("heard", REMOVE)


def test_without_a_runtime_directory_the_ledger_lives_in_memory_only(tmp_path):
    ledger = EndedLedger(None, tmp_path / "spool")
    ledger.record("000000000001.json", "heard", REMOVE)
    assert ledger.path is None and ledger.ended("000000000001.json") == ("heard", REMOVE)
    assert list(tmp_path.iterdir()) == []
