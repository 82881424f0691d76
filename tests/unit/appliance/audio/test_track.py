"""The track, the one object the announcer and the audio thread share: a FIFO of samples with an end
marker, a boundary it can be ended at, a cut, and the progress the audio thread writes back."""

from __future__ import annotations

import threading

import numpy as np

from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.engine.sequence import Priority


def ramp(start: int, stop: int) -> np.ndarray:
    return np.arange(start, stop, dtype=np.float32)


def test_samples_come_out_in_order_across_chunks_in_blocks_of_the_size_asked():
    track = Track("a")
    track.put(ramp(0, 700))
    track.put(np.arange(700, 1000, dtype=np.float64))  # converted to float32
    track.put(np.zeros(0, np.float32))  # nothing: ignored
    assert (track.received, track.available, track.taken) == (1000, 1000, 0)
    block, last = track.take(400)
    np.testing.assert_array_equal(block, ramp(0, 400))
    assert block.dtype == np.float32 and not last
    block, last = track.take(400)
    np.testing.assert_array_equal(block, ramp(400, 800))
    assert track.take(400) == (None, False)  # 200 left and more may come: not a block yet
    assert (track.taken, track.available) == (800, 200)


def test_the_reserve_is_held_back_while_the_source_runs_and_the_end_comes_in_one_final_block():
    track = Track("a")
    track.put(ramp(0, 1000))
    block, last = track.take(400, reserve=240)
    assert len(block) == 400 and not last
    assert track.take(400, reserve=240) == (None, False)  # 600 here, 640 needed
    track.close()
    block, last = track.take(400, reserve=240)  # 600 <= 400 + 240: the rest at once, the last block
    np.testing.assert_array_equal(block, ramp(400, 1000))
    assert last
    block, last = track.take(400)  # an ended track keeps saying so
    assert len(block) == 0 and last


def test_take_now_gives_what_is_there_for_a_fade_without_waiting():
    track = Track("a")
    track.put(ramp(0, 100))
    np.testing.assert_array_equal(track.take_now(240), ramp(0, 100))
    assert len(track.take_now(240)) == 0 and track.taken == 100


def test_a_closed_track_refuses_more_and_an_abandoned_one_drops_what_it_held():
    track = Track("a")
    track.put(ramp(0, 100))
    track.close()
    track.put(ramp(100, 200))
    assert track.received == 100 and track.closed
    abandoned = Track("b")
    abandoned.put(ramp(0, 100))
    abandoned.abandon()
    abandoned.put(ramp(100, 200))
    assert abandoned.available == 0 and abandoned.closed
    block, last = abandoned.take(10)
    assert len(block) == 0 and last


def test_end_at_a_boundary_keeps_what_plays_before_it_and_drops_the_rest():
    track = Track("a")
    track.put(ramp(0, 1000))
    track.take(300)
    assert track.end_at(600)
    assert track.closed and (track.taken, track.available, track.received) == (300, 300, 1000)
    block, last = track.take(1000)
    np.testing.assert_array_equal(block, ramp(300, 600))
    assert last
    track.put(ramp(1000, 1100))
    assert track.available == 0  # nothing more is accepted


def test_end_at_a_boundary_playback_has_passed_is_refused_and_changes_nothing():
    track = Track("a")
    track.put(ramp(0, 1000))
    track.take(700)
    assert not track.end_at(600)
    assert not track.closed and track.available == 300
    assert track.end_at(700)  # exactly at the position: nothing more plays
    assert track.available == 0 and track.closed


def test_a_cut_is_seen_by_the_audio_thread_with_whether_a_partial_recording_is_kept():
    track = Track("a")
    assert not track.is_cut and track.keep_partial
    track.cut()
    assert track.is_cut and track.keep_partial
    shutdown = Track("b")
    shutdown.cut(keep_partial=False)
    assert shutdown.is_cut and not shutdown.keep_partial


def test_progress_written_by_the_audio_thread_reads_back_consistently():
    track = Track("a")
    track.how = HowToPlay(Priority.EMERGENCY, "none", 0.5)
    assert (track.t_started, track.t_first_audio, track.ended, track.played_out) == (None, None, False, False)
    track.started(10.0)
    track.first_audio(10.5)
    track.first_audio(11.0)  # only the first one counts
    track.underflowed()
    track.underflowed()
    track.failed("AudioError: lost")
    track.failed("AudioError: still lost")  # the first error is the one reported
    track.finished(12.0, played_out=False)
    assert (track.t_started, track.t_first_audio, track.t_ended) == (10.0, 10.5, 12.0)
    assert track.ended and not track.played_out and track.underflows == 2
    assert track.error == "AudioError: lost" and track.how.gain == 0.5


def test_ready_and_the_start_threshold():
    track = Track("a")
    track.set_start_threshold(500)
    assert track.start_threshold == 500
    track.put(ramp(0, 400))
    assert not track.ready(500) and track.ready(400)
    track.close()
    assert track.ready(500)  # the source ended: whatever is there is all there is


def woken_by(wake) -> bool:
    """Whether an audio thread waiting on a track for 1000 samples wakes when this thread calls `wake`."""
    track, woke = Track("a"), []
    waiter = threading.Thread(target=lambda: woke.append(track.wait(1000, timeout=60)))
    waiter.start()
    wake(track)
    waiter.join(30)  # a lost wake-up would leave it waiting out its 60 s
    return not waiter.is_alive() and woke == [True]


def test_wait_wakes_on_enough_samples_on_a_cut_and_on_the_end_and_times_out_otherwise():
    assert Track("a").wait(100, timeout=0) is False
    assert woken_by(lambda track: track.put(ramp(0, 1000)))
    assert woken_by(lambda track: track.cut())
    assert woken_by(lambda track: track.close())
