"""Logging set-up: journald priorities when stderr is the journal stream, one handler, quiet libraries."""

from __future__ import annotations

import logging
import os

from qwen3tts.logs import priority, quiet_libraries, setup_logging, stderr_is_journal


def journal_env(stream) -> dict[str, str]:
    stat = os.fstat(stream.fileno())
    return {"JOURNAL_STREAM": f"{stat.st_dev}:{stat.st_ino}"}


def test_syslog_priorities_of_the_logging_levels():
    assert [priority(level) for level in (50, 40, 30, 20, 10)] == [2, 3, 4, 6, 7]
    assert priority(35) == 4  # between WARNING and ERROR: as urgent as the lower named level


def test_journal_lines_carry_the_priority_on_every_line_and_no_timestamp(tmp_path):
    path = tmp_path / "journal"
    with open(path, "w+") as stream:
        setup_logging(logging.DEBUG, environ=journal_env(stream), stream=stream)
        log = logging.getLogger("qwen3tts.test")
        log.warning("broker %s unreachable", "b1")
        log.info("ready")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    lines = path.read_text().splitlines()
    assert lines[:2] == ["<4>qwen3tts.test: broker b1 unreachable", "<6>qwen3tts.test: ready"]
    assert lines[2] == "<3>qwen3tts.test: failed"
    assert len(lines) > 4 and all(line.startswith("<3>") for line in lines[2:])  # the traceback too


def test_a_terminal_gets_timestamps_and_no_prefix(tmp_path):
    other = tmp_path / "other"
    other.write_text("")
    with open(other) as elsewhere, open(tmp_path / "terminal", "w+") as stream:
        assert not stderr_is_journal(journal_env(elsewhere), stream)  # JOURNAL_STREAM names another file
        setup_logging(logging.INFO, environ=journal_env(elsewhere), stream=stream)
        logging.getLogger("qwen3tts.test").info("ready")
    (line,) = (tmp_path / "terminal").read_text().splitlines()
    assert line.endswith(" INFO qwen3tts.test: ready") and not line.startswith("<")


def test_setting_up_twice_keeps_one_handler_so_no_line_is_written_twice(tmp_path):
    with open(tmp_path / "log", "w+") as stream:
        setup_logging(logging.INFO, environ={}, stream=stream)
        setup_logging(logging.INFO, environ={}, stream=stream)
        logging.getLogger("qwen3tts.test").info("once")
    assert (tmp_path / "log").read_text().count("once") == 1


def test_nncf_info_tables_are_dropped_and_its_warnings_come_through_our_handler(tmp_path):
    import nncf  # noqa: F401 - installs nncf's own stdout handler

    nncf_logger = logging.getLogger("nncf")
    saved = (list(nncf_logger.handlers), nncf_logger.propagate, nncf_logger.level)
    try:
        with open(tmp_path / "log", "w+") as stream:
            setup_logging(logging.INFO, environ={}, stream=stream)
            quiet_libraries()
            assert nncf_logger.handlers == []
            nncf_logger.info("Statistics of the bitwidth distribution")
            nncf_logger.warning("something odd")
        text = (tmp_path / "log").read_text()
        assert "bitwidth" not in text and text.count("nncf: something odd") == 1
    finally:
        nncf_logger.handlers[:] = saved[0]
        nncf_logger.propagate, nncf_logger.level = saved[1], saved[2]
