"""Issue 27 item 5: an emergency must always resume the normal announcement it interrupted, from the piece
that was playing, never cancel it.

The race (4 of 30 trials on the running daemon): the barge-in cancels the engine requests of the
interrupted announcement; a cancelled request's stream ends at once, and when the announcer read that
end as "this piece is complete" before the audio thread had noticed the cut, the piece being played
counted as done. With the playback position at the end of what had arrived, the resume point moved past
the last piece and the announcement was reported `cancelled (an emergency announcement barged in)`.

Reproduced twice, with every step in the test's hands: over the fake engine, and over the real Engine
(fake runner, greedy) stepped with `engine.step()` so the cancellation lands exactly between two turns.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from announcer_fakes import FOUR, TurnRig, fake_speech, pieces
from announcer_rig import fake_engine

from qwen3tts.appliance.announcements.announcement import Cut

BARGED_IN = "an emergency announcement barged in"


def test_a_cancelled_request_s_ended_stream_does_not_complete_the_piece_that_was_playing(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("n1", FOUR)
    rig.turn()
    n1 = rig.play("n1")
    handles = rig.engine.of("n1")
    for handle in handles[:3]:
        handle.speak()
    handles[3].produce(fake_speech(handles[3].request.text)[:480])  # the last piece is arriving
    rig.turn()
    while rig.playback.block():  # a WAV sink takes everything that is there
        pass
    rig.turn()
    track = n1.track
    assert track.taken == track.received == 7680 and n1.ends == [2400, 4800, 7200]

    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.turn()
    assert n1.cut is Cut.BARGE_IN and handles[3].cancelled
    assert handles[3].ready_chunks() == ([], True)  # what the announcer would read: "ended"
    rig.turn()  # the announcer's turn comes before the audio thread's next block
    assert n1.ends == [2400, 4800, 7200] and not track.closed  # the arriving piece is not complete
    rig.playback.block()
    rig.turn()
    assert rig.events("n1")[-1] == ("queued", f"{BARGED_IN}; resumes from sentence 4")
    rig.run_until_event("n1", "finished")
    assert rig.playback.order() == ["n1@0", "alarm@0", "n1@1"]
    np.testing.assert_array_equal(rig.playback.speech("n1", 1), fake_speech("Store notice, part four."))


class Recording:
    """Wraps the real engine's submit to keep every request (to synthesise each piece alone later)."""

    def __init__(self, engine):
        self.engine, self.requests, self._submit = engine, [], engine.submit
        engine.submit = self.submit

    def submit(self, request):
        self.requests.append(request)
        return self._submit(request)


def alone(request) -> np.ndarray:
    """The PCM of one request synthesised by a fresh engine (greedy: what the announcer gets)."""
    engine = fake_engine()
    handle = engine.submit(dataclasses.replace(request, id=f"alone-{request.id}"))
    while not handle.wait(0):
        engine.step()
    return handle.result(0)


def step_until(engine, condition, limit: int = 500) -> None:
    for _ in range(limit):
        if condition():
            return
        engine.step()
    raise AssertionError("the engine never got there")


@pytest.mark.parametrize("last", [True, False], ids=["in-the-last-piece", "in-a-middle-piece"])
def test_with_the_real_engine_stepped_by_hand_the_barge_in_resumes_from_the_piece_that_was_playing(
    tmp_path, last
):
    engine = fake_engine()  # the real Engine over the fake runner; its loop is never started
    recording = Recording(engine)
    rig = TurnRig(tmp_path, engine=engine, lookahead_s=0.0)  # one piece in the engine at a time
    text = "Store notice, part one. Store notice, part two." + ("" if last else " Store notice, part three.")
    rig.say("n1", text)
    rig.turn()
    n1 = rig.play("n1")
    first = n1.pieces[0].handle
    step_until(engine, lambda: first.wait(0))
    rig.turn()  # piece 0 is complete; piece 1 goes to the engine
    second = n1.pieces[1].handle
    step_until(engine, lambda: (rig.turn(), n1.track.received > n1.ends[0])[1])  # piece 1 is arriving
    assert not second.wait(0)
    while rig.playback.block():  # the audio thread took all that is there
        pass
    rig.turn()
    assert n1.track.taken == n1.track.received > n1.ends[0] and rig.kinds("n1")[-1] == "first_audio"

    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.turn()  # the barge-in: n1's request is cancelled in the engine
    assert n1.cut is Cut.BARGE_IN and second.cancelled and not second.wait(0)
    rig.turn()  # the cancelled stream has ended for the reader; the audio thread has not seen the cut
    engine.step()  # the engine finishes the cancelled request
    rig.turn()
    assert n1.ends == [len(alone(recording.requests[0]))]
    rig.playback.block()  # now it sees the cut
    rig.turn()
    assert rig.events("n1")[-1] == ("queued", f"{BARGED_IN}; resumes from sentence 2")

    rig.run_until_event("n1", "finished")
    assert rig.playback.order() == ["n1@0", "alarm@0", "n1@1"]
    requests = [r for r in recording.requests if r.id.startswith("n1#")]
    resumed = requests[2:]  # the first play submitted pieces 0 and 1; the second starts from piece 1
    assert [r.text for r in resumed] == pieces(text)[1:]
    played = rig.playback.speech("n1", 0)
    whole = np.concatenate([alone(r) for r in requests[:2]])
    np.testing.assert_array_equal(played, whole[: len(played)])  # the first play, up to the cut
    np.testing.assert_array_equal(rig.playback.speech("n1", 1), np.concatenate([alone(r) for r in resumed]))
    assert rig.kinds("alarm") == ["queued", "started", "first_audio", "finished"]
