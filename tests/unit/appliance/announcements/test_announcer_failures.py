"""Nothing silences the announcer: an exception while handling one announcement fails that one only (an
`error` event with the exception's class) and the loop goes on; a piece the engine refuses or fails
ends its announcement with the engine's reason; a spool that turns read-only still ends every
announcement with an event, and the log says so once."""

from __future__ import annotations

import errno
import logging

import numpy as np
import pytest
from announcer_fakes import FOUR, TurnRig, expected_pcm


def finished_normally(rig: TurnRig, ann_id: str) -> bool:
    return rig.kinds(ann_id) == ["queued", "started", "first_audio", "finished"]


def test_an_exception_while_submitting_one_announcement_fails_that_one_and_the_others_play(tmp_path):
    rig = TurnRig(tmp_path)
    rig.engine.submit_error = lambda r: RuntimeError("prompt bug") if r.id.startswith("bad#") else None
    rig.say("good", FOUR)
    rig.say("bad", "This one trips a bug.")
    rig.say("after", "And the loop goes on.")
    rig.run_until_event("after", "finished")
    assert rig.events("bad") == [("queued", ""), ("error", "RuntimeError: prompt bug")]
    assert finished_normally(rig, "good") and finished_normally(rig, "after")
    np.testing.assert_array_equal(rig.playback.speech("good"), expected_pcm(FOUR))
    assert rig.spooled() == [] and rig.queue.find("bad") is None


def test_an_exception_while_starting_one_fails_it_and_the_next_one_starts(tmp_path):
    rig = TurnRig(tmp_path)
    play_next = rig.playback.play_next

    def broken_once(track):
        if track.label == "broken":
            raise RuntimeError("no audio thread today")
        play_next(track)

    rig.playback.play_next = broken_once
    rig.say("broken", "This one cannot start.")
    rig.say("next", "This one can.")
    rig.run_until_event("next", "finished")
    assert rig.events("broken") == [("queued", ""), ("error", "RuntimeError: no audio thread today")]
    assert finished_normally(rig, "next") and rig.playback.order() == ["next@0"]


def test_an_exception_while_moving_its_audio_fails_the_playing_one_and_the_next_one_plays(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("current", FOUR)
    rig.say("next", "The next one.")
    rig.turn()
    current = rig.play("current")
    handle = rig.engine.of("current")[0]
    handle.ready_chunks = lambda: (_ for _ in ()).throw(KeyError("chunk"))
    rig.turn()
    assert rig.events("current") == [("queued", ""), ("error", "KeyError: 'chunk'")]
    assert rig.play("current") is None and current.track.closed and not current.track.available
    assert handle.cancelled
    rig.run_until_event("next", "finished")
    assert finished_normally(rig, "next") and rig.spooled() == []


def test_an_exception_while_queueing_one_fails_that_one_only(tmp_path):
    rig = TurnRig(tmp_path)
    put = rig.queue.put
    rig.queue.put = lambda ann, redelivered=False: (
        (_ for _ in ()).throw(TypeError("odd field")) if ann.id == "odd" else put(ann, redelivered)
    )
    acks = []
    rig.say("odd", "An odd one.", ack=lambda: acks.append("odd"))
    rig.say("fine", "A fine one.")
    rig.run_until_event("fine", "finished")
    assert rig.events("odd") == [("error", "TypeError: odd field")] and acks == ["odd"]
    assert finished_normally(rig, "fine")


def test_a_piece_the_engine_refuses_fails_the_playing_one_after_its_cut_and_a_waiting_one_at_once(tmp_path):
    rig = TurnRig(tmp_path)
    rig.engine.refuse = lambda request: "prompt exceeds KV pool" if "part three" in request.text else None
    rig.say("current", FOUR)
    rig.turn()
    current = rig.play("current")
    assert current.track.is_cut  # its third piece was refused at submission: cut before it spoke
    assert all(h.cancelled for h in rig.engine.of("current"))
    rig.playback.block()
    rig.turn()
    assert rig.events("current") == [("queued", ""), ("started", ""), ("error", "prompt exceeds KV pool")]
    assert rig.playback.heard(current.track).size == 0
    rig.say("current-2", "Store notice, part two.")
    rig.say("waiting", FOUR)  # pieces 1 and 2 go ahead; piece 3 is refused
    rig.run_until_event("current-2", "finished")
    assert rig.events("waiting") == [("queued", ""), ("error", "prompt exceeds KV pool")]  # one error
    assert rig.play("waiting") is None and rig.spooled() == []
    assert [h.cancelled for h in rig.engine.of("waiting")] == [True, True]


def test_a_failed_synthesis_fails_the_playing_one_with_the_engine_s_reason(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("current", FOUR)
    rig.turn()
    first, second, *rest = rig.engine.of("current")
    first.speak()
    second.fail("request 'current#1' failed: InjectedError: codec")
    track = rig.announcer.current.track
    rig.run_until_event("current", "error", speak=False)
    assert rig.events("current")[-1] == ("error", "request 'current#1' failed: InjectedError: codec")
    assert all(h.cancelled for h in rest)
    assert track.is_cut and track.keep_partial  # a failed play keeps what a speaker heard


def test_a_waiting_one_whose_text_cannot_be_prepared_fails_alone_and_the_playing_one_plays_on(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("good", FOUR)
    rig.turn()
    rig.say("klingon", "nuqneH", lang="klingon")  # as a hostile spool file could hold it
    rig.turn()
    [(event, reason)] = rig.events("klingon")[1:]
    assert event == "error" and reason.startswith("unknown language 'klingon'")
    rig.run_until_event("good", "finished")
    assert finished_normally(rig, "good")


def test_the_same_unpreparable_text_fails_with_the_same_reason_when_nothing_plays(tmp_path, caplog):
    rig = TurnRig(tmp_path)
    with caplog.at_level(logging.ERROR):
        rig.say("klingon", "nuqneH", lang="klingon")
        rig.turn()
    [(event, reason)] = rig.events("klingon")[1:]
    assert event == "error" and reason.startswith("unknown language 'klingon'")  # the engine's words only
    assert not [r for r in caplog.records if r.exc_info]  # bad input, not a bug: no traceback
    assert rig.spooled() == [] and rig.announcer.current is None


@pytest.fixture
def read_only(monkeypatch):
    """Turns a rig's spool read-only (as root, chmod would not stop the writes)."""

    def turn_read_only(rig: TurnRig) -> None:
        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, "Read-only file system")

        for name in ("write", "remove"):
            monkeypatch.setattr(rig.queue.spool, name, refuse)

    return turn_read_only


def test_a_spool_that_turns_read_only_still_ends_every_announcement_with_an_event(
    tmp_path, read_only, caplog
):
    rig = TurnRig(tmp_path)
    rig.say("playing", "Playing when the disk fails.")
    rig.say("waiting", "Waiting when the disk fails.")
    rig.run_until_event("playing", "first_audio")
    read_only(rig)
    with caplog.at_level(logging.INFO):
        rig.say("arriving", "Arriving after the disk failed.")
        rig.run_until_event("waiting", "error")
        rig.turn(3)
    assert rig.kinds("playing")[-1] == "finished"  # it was heard: finished, though its end is not spooled
    assert rig.events("waiting")[-1] == ("error", "spool write failed: Read-only file system")
    assert rig.events("arriving") == [("error", "spool write failed: Read-only file system")]
    assert rig.announcer.current is None and len(rig.queue) == 0
    trouble = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len([r for r in trouble if "Read-only file system" in r.getMessage()]) == 1, [
        r.getMessage() for r in trouble
    ]
