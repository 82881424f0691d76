"""The guarded text front end (text/guard.py, issue 27 item 3): `prepare` in worker processes, a text
that stalls is abandoned by its deadline (the worker killed by pid and replaced) and the next text is
read; a worker killed from outside is replaced; the lexicon (SIGHUP's) reaches the workers.

The stall is real: the workers run `prepare` after a pattern that backtracks catastrophically in
Python's `re` (tests/support/stalling_front_end.py), which holds the interpreter lock of its process."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from stalling_front_end import STALLING_TEXT, prepare_after_backtracking

from qwen3tts.errors import RequestError
from qwen3tts.synthesis import TextOptions, read_text
from qwen3tts.text import Lexicon, prepare
from qwen3tts.text.guard import FrontEndTimeout, GuardedFrontEnd

DEADLINE_S = 1.0
SLACK_S = 10.0  # a busy CI core; a stall left alone would take days


@pytest.fixture
def guarded():
    started = []

    def start(workers: int = 1, deadline_s: float = DEADLINE_S) -> GuardedFrontEnd:
        front_end = GuardedFrontEnd(deadline_s, workers=workers, target=prepare_after_backtracking)
        started.append(front_end.start())
        return front_end

    yield start
    for front_end in started:
        front_end.stop()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_text_reads_in_the_worker_as_it_reads_in_process(guarded):
    front_end = guarded()
    lexicon = Lexicon.from_dict({"words": {"Rd.": "Road"}, "patterns": {r"\bPl\. (\d+)": r"Platform \1"}})
    text = "Pl. 4 for Station Rd. at 10:30, £2.50."
    assert front_end(text, "english", True, lexicon) == prepare(text, "english", True, lexicon)
    assert os.getpid() not in front_end.pids()


def test_a_stalled_text_is_abandoned_by_its_deadline_and_the_next_text_is_read(guarded):
    front_end = guarded()
    [stalled] = front_end.pids()
    started = time.monotonic()
    with pytest.raises(FrontEndTimeout, match=r"the text front end took longer than 1 s"):
        front_end(STALLING_TEXT, "english")
    assert DEADLINE_S <= time.monotonic() - started < DEADLINE_S + SLACK_S
    assert gone(stalled) and stalled not in front_end.pids() and front_end.replaced == 1
    assert front_end("Next one.", "english").pieces[0].normalized == "Next one."


def test_a_stall_in_one_worker_leaves_the_other_reading(guarded):
    front_end = guarded(workers=2)
    with pytest.raises(FrontEndTimeout):
        front_end(STALLING_TEXT, "english")
    assert len(front_end.pids()) == 2
    assert [front_end(f"Text {n}.", "english").pieces[0].normalized for n in range(1, 5)] == [
        "Text one.",
        "Text two.",
        "Text three.",
        "Text four.",
    ]


def dead(pid: int) -> bool:
    """Exited: gone, or a zombie its parent has not reaped yet (multiprocessing reaps on is_alive)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_worker_killed_from_outside_is_replaced_and_the_text_still_read(guarded):
    front_end = guarded(workers=2)
    killed = front_end.pids()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    # Killed while idle, as from outside: wait until they have exited (SIGKILL is not instant on a busy
    # machine), else the call races the kills and may meet a worker that dies only once it was asked.
    deadline = time.monotonic() + SLACK_S
    while not all(dead(pid) for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert front_end("Still here.", "english").pieces[0].normalized == "Still here."
    assert front_end.replaced >= 1 and all(pid > 0 for pid in front_end.pids())


def test_the_request_s_own_error_comes_back_as_its_request_error(guarded):
    front_end = guarded()
    with pytest.raises(RequestError, match="klingon") as raised:
        front_end("Hello.", "klingon")
    assert not isinstance(raised.value, FrontEndTimeout) and front_end.replaced == 0


def test_a_reloaded_lexicon_reaches_the_worker_and_is_sent_only_when_it_changed(guarded):
    front_end = guarded()
    old = Lexicon.from_dict({"words": {"Qwen": "Kwen"}})
    new = Lexicon.from_dict({"words": {"Qwen": "Queen"}})
    assert front_end("Qwen speaks.", "english", True, old).pieces[0].normalized == "Kwen speaks."
    assert front_end("Qwen again.", "english", True, old).pieces[0].normalized == "Kwen again."
    assert front_end("Qwen speaks.", "english", True, new).pieces[0].normalized == "Queen speaks."
    assert front_end("Qwen speaks.", "english", True, None).pieces[0].normalized == "Qwen speaks."


def test_the_one_call_of_the_text_front_end_goes_through_the_guard(guarded):
    options = TextOptions(front_end=guarded())
    with pytest.raises(FrontEndTimeout):
        read_text(STALLING_TEXT, "english", options)
    assert read_text("Mind the gap.", "english", options) == (["Mind the gap."], ())
