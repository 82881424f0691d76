"""The hostile matrix's verdict (bench/matrix_tally.py) on made-up event lists: a request that ended twice or
never makes its row unclean, one the contract lets go unanswered does not, and a repeat's `finished` is not
an end."""

from __future__ import annotations

import pytest

from qwen3tts.bench.matrix_tally import count_ends, ends_by_key, tally


def life(*names: str, reason: str = "") -> list[dict]:
    return [{"event": name, "id": "a", "reason": reason} for name in names]


def test_an_announcement_spoken_once_is_answered_and_the_row_clean():
    row = tally(
        "says", ["a", "b"], ends_by_key({"a": life("queued", "started", "finished"), "b": life("rejected")})
    )
    assert (row.sent, row.answered, row.lost, row.doubled) == (2, 2, 0, 0)
    assert row.clean and "clean" in row.line() and row.to_json()["clean"] is True


def test_an_id_with_two_ends_is_doubled_and_the_row_not_clean():
    events = {"a": life("queued", "started", "finished"), "b": life("queued", "cancelled", "finished")}
    row = tally("says", ["a", "b"], ends_by_key(events))
    assert (row.answered, row.doubled, row.lost) == (1, 1, 0)
    assert not row.clean and "NOT CLEAN" in row.line() and row.failures == ["b: 2 ends"]


def test_an_id_with_no_end_is_lost_and_the_row_not_clean():
    row = tally("says", ["a", "b"], ends_by_key({"a": life("queued", "started", "first_audio")}))
    assert (row.answered, row.lost, row.doubled) == (0, 2, 0)
    assert not row.clean and row.to_json()["clean"] is False


def test_a_key_that_may_be_silent_is_not_lost_but_one_that_ended_twice_still_doubles():
    events = {"dup-ok": [], "dup-twice": life("rejected", "rejected")}
    row = tally("mqtt", ["dup-ok", "dup-twice"], ends_by_key(events), may_be_silent=["dup-ok", "dup-twice"])
    assert (row.silent, row.lost, row.doubled) == (1, 0, 1) and not row.clean


@pytest.mark.parametrize(
    ("events", "ends"),
    [
        (life("queued", "started", "finished", reason="repeats later"), 0),  # another round follows
        (life("queued", "started", "finished", reason="repeats later") + life("finished"), 1),
        (life("queued", "started", "queued", "started", "finished"), 1),  # resumed after a barge-in
        (life("not_found"), 1),
        (life("stopped", "volume_set"), 2),
        (life("queued", "error", "expired"), 2),
    ],
)
def test_what_counts_as_an_end(events, ends):
    assert count_ends(events) == ends


def test_a_traceback_or_a_failure_alone_makes_a_row_unclean():
    row = tally("http", ["h0"], {"h0": 1})
    assert row.clean
    row.tracebacks = 1
    assert not row.clean
    row.tracebacks, row.failures = 0, ["h0: 500"]
    assert not row.clean


def test_a_key_listed_twice_is_sent_once():
    assert tally("x", ["a", "a"], {"a": 1}).sent == 1
