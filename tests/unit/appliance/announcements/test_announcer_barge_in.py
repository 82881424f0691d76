"""Priorities as in PA paging, through `Announcer.turn()`: an emergency barges in within one audio block
and the interrupted announcement resumes from the piece that was playing (or is cancelled with
`interrupted: cancel`); a priority announcement takes over at the next piece boundary.

Every piece is 2400 samples of `fake_speech` and the audio thread's part takes 960-sample blocks, so
"playing piece k" is exactly where the test says it is."""

from __future__ import annotations

import numpy as np
import pytest
from announcer_fakes import FOUR, TurnRig, expected_pcm, pieces

from qwen3tts.appliance.announcements.announcement import Cut

PIECE = 2400
ALARM = "Fire alarm. Leave the building now."
BARGED_IN = "an emergency announcement barged in"
TOOK_OVER = "a priority announcement took over"


def play_into_piece(rig: TurnRig, play, k: int) -> None:
    """The audio thread plays until it is inside piece `k` of `play` (whose PCM is there)."""
    while play.track.taken <= k * PIECE:
        assert rig.playback.block(), "the track ran dry"
    rig.turn()  # its started / first_audio events


def playing(rig: TurnRig, k: int, synthesised: int = 3, ann_id: str = "normal", **fields):
    """`ann_id` (FOUR) plays inside piece `k`; pieces 0..`synthesised` are in, the later ones still run.
    Returns its play."""
    rig.say(ann_id, FOUR, **fields)
    rig.turn()
    for handle in rig.engine.of(ann_id)[: synthesised + 1]:
        handle.speak()
    rig.turn()
    play = rig.play(ann_id)
    play_into_piece(rig, play, k)
    return play


@pytest.mark.parametrize("k", [0, 1, 3])
def test_an_emergency_barges_in_within_a_block_and_the_interrupted_one_resumes_from_its_piece(tmp_path, k):
    rig = TurnRig(tmp_path)
    normal = playing(rig, k, synthesised=k)
    track, heard = normal.track, normal.track.taken
    still_running = rig.engine.live("normal")
    assert len(still_running) == 3 - k

    rig.say("alarm", ALARM, priority="emergency")
    rig.turn()
    assert track.is_cut and not track.keep_partial  # cut in the turn the emergency arrived; no recording
    assert normal.cut is Cut.BARGE_IN
    assert all(h.cancelled for h in still_running)  # its synthesis stops at once
    assert rig.engine.texts("alarm") == pieces(ALARM)  # and the emergency's starts
    assert rig.playback.block() == 0 and track.ended and not track.played_out  # not one more block
    np.testing.assert_array_equal(rig.playback.heard(track), expected_pcm(FOUR)[:heard])

    rig.turn()
    assert rig.events("normal")[-1] == ("queued", f"{BARGED_IN}; resumes from sentence {k + 1}")
    assert rig.queue.find("normal").cursor == k  # the sentence it resumes from ...
    assert rig.spooled() == ["normal", "alarm"]  # ... spooled: a crash now resumes it too
    rig.run_until_event("normal", "finished", count=1)
    assert rig.playback.order() == ["normal@0", "alarm@0", "normal@1"]
    assert rig.kinds("alarm") == ["queued", "started", "first_audio", "finished"]
    assert rig.kinds("normal") == ["queued", "started", "first_audio", "queued", "started", "first_audio",
                                   "finished"]  # fmt: skip
    assert rig.engine.texts("normal")[4:] == pieces(FOUR)[k:]  # submitted again from the piece it was in
    np.testing.assert_array_equal(rig.playback.speech("normal", 1), expected_pcm(FOUR, start=k))
    assert rig.spooled() == []


def test_with_interrupted_cancel_the_barged_in_announcement_is_cancelled_and_leaves_the_spool(tmp_path):
    rig = TurnRig(tmp_path, interrupted="cancel")
    playing(rig, 1)
    rig.say("alarm", ALARM, priority="emergency")
    rig.run_until_event("alarm", "finished")
    rig.turn(3)
    assert rig.events("normal")[-1] == ("cancelled", BARGED_IN)
    assert rig.kinds("normal") == ["queued", "started", "first_audio", "cancelled"]
    assert rig.playback.order() == ["normal@0", "alarm@0"] and rig.spooled() == []
    assert rig.play("normal") is None and rig.announcer.queue.find("normal") is None


def test_a_priority_one_takes_over_at_the_next_boundary_when_the_playing_piece_is_all_there(tmp_path):
    rig = TurnRig(tmp_path)
    normal = playing(rig, 0)
    rig.say("prio", "Customer announcement.", priority="priority")
    rig.turn()
    assert normal.cut is Cut.TAKEOVER and normal.cut_at == 1 and not normal.track.is_cut
    assert normal.track.closed and normal.track.available == PIECE - normal.track.taken  # ends at piece 0
    rig.run_until_event("normal", "finished")
    assert rig.playback.order() == ["normal@0", "prio@0", "normal@1"]
    assert (rig.events("normal")[3]) == ("queued", f"{TOOK_OVER}; resumes from sentence 2")
    np.testing.assert_array_equal(rig.playback.speech("normal", 0), expected_pcm(FOUR, stop=1))
    np.testing.assert_array_equal(rig.playback.speech("normal", 1), expected_pcm(FOUR, start=1))
    assert "cancelled" not in rig.kinds("normal")


def test_a_takeover_while_the_playing_piece_arrives_cancels_the_later_pieces_and_ends_after_it(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("normal", FOUR)
    rig.turn()
    normal = rig.play("normal")
    first, *later = rig.engine.of("normal")
    first.produce(np.full(1200, 0.5, np.float32))
    rig.turn()
    assert rig.playback.block() == 960
    rig.say("prio", "Customer announcement.", priority="priority")
    rig.turn()
    assert normal.cut is Cut.TAKEOVER and normal.cut_at == 1
    assert all(h.cancelled for h in later) and not first.cancelled  # the piece playing is finished
    assert not normal.track.closed
    first.finish(np.full(1200, 0.25, np.float32))
    rig.turn()
    assert normal.track.closed and normal.ends == [2400]
    rig.run_until_event("prio", "finished")
    np.testing.assert_array_equal(
        rig.playback.speech("normal", 0), np.r_[np.full(1200, 0.5), np.full(1200, 0.25)].astype(np.float32)
    )
    assert rig.events("normal")[3] == ("queued", f"{TOOK_OVER}; resumes from sentence 2")


def test_no_takeover_on_the_last_piece_it_finishes_and_then_the_priority_one_plays(tmp_path):
    rig = TurnRig(tmp_path)
    normal = playing(rig, 3)
    rig.say("prio", "Customer announcement.", priority="priority")
    rig.turn()
    assert normal.cut is None
    rig.run_until_event("prio", "finished")
    assert rig.kinds("normal") == ["queued", "started", "first_audio", "finished"]
    assert rig.playback.order() == ["normal@0", "prio@0"]
    np.testing.assert_array_equal(rig.playback.speech("normal"), expected_pcm(FOUR))


def test_an_emergency_barges_in_even_while_a_priority_one_waits_for_the_boundary(tmp_path):
    rig = TurnRig(tmp_path)
    normal = playing(rig, 0)
    rig.say("prio", "Customer announcement.", priority="priority")
    rig.turn()
    assert normal.cut is Cut.TAKEOVER
    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.turn()
    assert normal.cut is Cut.BARGE_IN and normal.track.is_cut
    rig.run_until_event("normal", "finished")
    assert rig.playback.order() == ["normal@0", "alarm@0", "prio@0", "normal@1"]
    assert rig.events("normal")[3] == ("queued", f"{BARGED_IN}; resumes from sentence 1")
    np.testing.assert_array_equal(rig.playback.speech("normal", 1), expected_pcm(FOUR))


@pytest.mark.parametrize("priority", ["priority", "emergency"])
def test_one_that_may_not_interrupt_waits_for_the_end(tmp_path, priority):
    rig = TurnRig(tmp_path)
    normal = playing(rig, 0)
    rig.say("polite", "After you.", priority=priority, interrupt=False)
    rig.run_until_event("polite", "finished")
    assert rig.playback.order() == ["normal@0", "polite@0"] and normal.cut is None
    assert rig.kinds("normal") == ["queued", "started", "first_audio", "finished"]


def test_an_emergency_does_not_barge_in_on_an_emergency(tmp_path):
    rig = TurnRig(tmp_path)
    playing(rig, 1, ann_id="first", priority="emergency")
    rig.say("second", ALARM, priority="emergency")
    rig.run_until_event("second", "finished")
    assert rig.playback.order() == ["first@0", "second@0"]
    assert rig.kinds("first") == ["queued", "started", "first_audio", "finished"]
