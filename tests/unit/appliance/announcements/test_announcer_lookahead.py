"""Look-ahead through `Announcer.turn()`: which pieces are in the engine at each step, within the engine's
batch limit (the thermal governor's) and the `lookahead_s` horizon; the piece that plays next always, and
an emergency's pieces regardless of both limits."""

from __future__ import annotations

import numpy as np
from announcer_fakes import FOUR, TurnRig, expected_pcm, pieces

RATE = 24000


def live_ids(rig: TurnRig) -> list[str]:
    return [h.request.id for h in rig.engine.live()]


def test_the_next_announcements_are_synthesised_while_one_plays_never_beyond_the_batch_limit(tmp_path):
    rig = TurnRig(tmp_path, max_batch=3, lookahead_s=60.0)
    for name in ("a", "b", "c"):
        rig.say(name, FOUR)
    rig.turn()
    assert live_ids(rig) == ["a#0", "a#1", "a#2"]  # three at once, the batch limit
    rig.engine.of("a")[0].speak()
    rig.turn()
    assert live_ids(rig) == ["a#1", "a#2", "a#3"]  # one finished, the next one in
    for handle in rig.engine.live():
        handle.speak()
    rig.turn()
    assert live_ids(rig) == ["b#4", "b#5", "b#6"]  # `a` is all there: `b` is synthesised while `a` plays
    assert rig.play("b").handles() and rig.queue.find("b") is not None and rig.kinds("b") == ["queued"]
    assert rig.announcer.current.id == "a"

    rig.engine.max_batch = 1  # the thermal governor lowers the limit: nothing new until below it
    for handle in rig.engine.live()[:2]:
        handle.speak()
    rig.turn()
    assert live_ids(rig) == ["b#6"]
    rig.engine.live()[0].speak()
    rig.turn()
    assert live_ids(rig) == ["b#7"]
    rig.engine.max_batch = 3
    rig.run_until_event("c", "finished")
    assert rig.engine.most_live == 3
    assert rig.playback.order() == ["a@0", "b@0", "c@0"]
    for name in ("a", "b", "c"):
        np.testing.assert_array_equal(rig.playback.speech(name), expected_pcm(FOUR))


def test_without_look_ahead_one_piece_is_synthesised_at_a_time(tmp_path):
    rig = TurnRig(tmp_path, lookahead_s=0.0)
    rig.say("a", FOUR)
    rig.say("b", FOUR)
    rig.turn()
    assert live_ids(rig) == ["a#0"]
    rig.run_until_event("b", "finished")
    assert rig.engine.most_live == 1
    assert rig.engine.texts() == pieces(FOUR) * 2  # in play order
    np.testing.assert_array_equal(rig.playback.speech("b"), expected_pcm(FOUR))


def test_a_piece_is_submitted_once_the_audio_before_it_is_shorter_than_the_horizon(tmp_path):
    rig = TurnRig(tmp_path, lookahead_s=3.0)
    rig.say("a", FOUR)
    rig.turn()
    a = rig.play("a")
    estimates = [rig.lookahead.estimate(a, i) for i in range(4)]
    assert estimates[0] < 3.0 <= estimates[0] + estimates[1]  # about 1.6 s each, from the text's length
    assert live_ids(rig) == ["a#0", "a#1"]  # piece 1 starts within 3 s of audio, piece 2 does not

    rig.engine.of("a")[0].finish(np.full(4 * RATE, 0.5, np.float32))  # piece 0 is 4 s long
    rig.turn()
    assert live_ids(rig) == ["a#1"]  # 4 s buffered + piece 1 before piece 2
    while a.track.taken < 2 * RATE:
        rig.playback.block()
    rig.turn()
    assert live_ids(rig) == ["a#1"]  # 2 s left of piece 0 + about 1.6 s of piece 1 >= 3 s
    while a.track.taken < 3 * RATE:
        rig.playback.block()
    rig.turn()
    assert live_ids(rig) == ["a#1", "a#2"]  # 1 s + 1.6 s < 3 s


def test_the_piece_that_plays_next_is_submitted_even_at_the_batch_limit(tmp_path):
    rig = TurnRig(tmp_path, max_batch=1)
    rig.say("a", "The first one.")
    rig.say("b", "The second one.")
    rig.turn()
    assert live_ids(rig) == ["a#0"]
    rig.engine.of("a")[0].speak()
    rig.turn()
    assert live_ids(rig) == ["b#1"]  # ahead while `a` plays, since `a` needs nothing more
    rig.run_until_event("b", "finished")
    assert rig.playback.order() == ["a@0", "b@0"]


def test_an_emergency_s_pieces_ignore_the_batch_limit_and_the_horizon(tmp_path):
    rig = TurnRig(tmp_path, max_batch=1, lookahead_s=0.0)
    rig.say("normal", FOUR)
    rig.turn()
    rig.say("alarm", FOUR, priority="emergency", interrupt=False)  # waits, but is synthesised at once
    rig.turn()
    assert live_ids(rig) == ["normal#0", "alarm#1", "alarm#2", "alarm#3", "alarm#4"]


def test_a_piece_ahead_joins_the_batch_only_while_every_stream_would_stay_faster_than_real_time(tmp_path):
    rig = TurnRig(tmp_path, max_batch=4, lookahead_s=60.0)
    rig.lookahead.rtf = None  # nothing measured since start
    rig.say("a", FOUR)
    rig.say("b", FOUR)
    rig.turn()
    assert live_ids(rig) == ["a#0"]  # the piece that plays next; the rest waits for a figure
    rig.engine.decode_rate = 11.0  # one stream at 0.88 x real time: a second would slow it further
    rig.turn()
    assert live_ids(rig) == ["a#0"]
    rig.engine.of("a")[0].speak()
    rig.turn()
    assert live_ids(rig) == ["a#1"]  # the piece that plays next now goes, however slow
    rig.engine.decode_rate = 40.0  # 3.2 streams' worth of real time: three at once, not four
    rig.turn()
    assert live_ids(rig) == ["a#1", "a#2", "a#3"]
    rig.engine.decode_rate = 80.0
    rig.turn()
    assert live_ids(rig) == ["a#1", "a#2", "a#3", "b#4"]
    rig.run_until_event("b", "finished")
    assert rig.playback.order() == ["a@0", "b@0"]
    np.testing.assert_array_equal(rig.playback.speech("b"), expected_pcm(FOUR))
