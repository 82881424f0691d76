"""The track, the one object the announcer and the audio thread share: a FIFO of samples with an end
marker, a boundary it can be ended at, a cut, and the progress the audio thread writes back."""

from __future__ import annotations

import threading

import numpy as np

from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.appliance.audio.track_reader import TrackReader
from qwen3tts.appliance.priority import Priority


def ramp(start: int, stop: int) -> np.ndarray:
    return np.arange(start, stop, dtype=np.float32)


def one_zone(label: str = "a") -> tuple[Track, TrackReader]:
    track = Track(label)
    return track, TrackReader(track)


def test_samples_come_out_in_order_across_chunks_in_blocks_of_the_size_asked():
    track, reader = one_zone()
    track.put(ramp(0, 700))
    track.put(np.arange(700, 1000, dtype=np.float64))  # converted to float32
    track.put(np.zeros(0, np.float32))  # nothing: ignored
    assert (track.received, track.available, track.taken) == (1000, 1000, 0)
    block, last = reader.take(400)
    np.testing.assert_array_equal(block, ramp(0, 400))
    assert block.dtype == np.float32 and not last
    block, last = reader.take(400)
    np.testing.assert_array_equal(block, ramp(400, 800))
    assert reader.take(400) == (None, False)  # 200 left and more may come: not a block yet
    assert (track.taken, track.available) == (800, 200)


def test_the_reserve_is_held_back_while_the_source_runs_and_the_end_comes_in_one_final_block():
    track, reader = one_zone()
    track.put(ramp(0, 1000))
    block, last = reader.take(400, reserve=240)
    assert len(block) == 400 and not last
    assert reader.take(400, reserve=240) == (None, False)  # 600 here, 640 needed
    track.close()
    block, last = reader.take(400, reserve=240)  # 600 <= 400 + 240: the rest at once, the last block
    np.testing.assert_array_equal(block, ramp(400, 1000))
    assert last
    block, last = reader.take(400)  # an ended track keeps saying so
    assert len(block) == 0 and last


def test_take_now_gives_what_is_there_for_a_fade_without_waiting():
    track, reader = one_zone()
    track.put(ramp(0, 100))
    np.testing.assert_array_equal(reader.take_now(240), ramp(0, 100))
    assert len(reader.take_now(240)) == 0 and track.taken == 100


def test_a_closed_track_refuses_more_and_an_abandoned_one_drops_what_it_held():
    track, reader = one_zone()
    track.put(ramp(0, 100))
    track.close()
    track.put(ramp(100, 200))
    assert track.received == 100 and track.closed
    abandoned, reader = one_zone("b")
    abandoned.put(ramp(0, 100))
    abandoned.abandon()
    abandoned.put(ramp(100, 200))
    assert abandoned.available == 0 and abandoned.closed
    block, last = reader.take(10)
    assert len(block) == 0 and last


def test_end_at_a_boundary_keeps_what_plays_before_it_and_drops_the_rest():
    track, reader = one_zone()
    track.put(ramp(0, 1000))
    reader.take(300)
    assert track.end_at(600)
    assert track.closed and (track.taken, track.available, track.received) == (300, 300, 600)
    block, last = reader.take(1000)
    np.testing.assert_array_equal(block, ramp(300, 600))
    assert last
    track.put(ramp(1000, 1100))
    assert track.available == 0  # nothing more is accepted


def test_end_at_a_boundary_playback_has_passed_is_refused_and_changes_nothing():
    track, reader = one_zone()
    track.put(ramp(0, 1000))
    reader.take(700)
    assert not track.end_at(600)
    assert not track.closed and track.available == 300
    assert track.end_at(700)  # exactly at the position: nothing more plays
    assert track.available == 0 and track.closed


def test_a_cut_is_seen_by_the_audio_thread_with_whether_a_partial_recording_is_kept():
    track, reader = one_zone()
    assert not reader.is_cut and reader.keep_partial
    track.cut()
    assert reader.is_cut and reader.keep_partial
    shutdown, shut_reader = one_zone("b")
    shutdown.cut(keep_partial=False)
    assert shut_reader.is_cut and not shut_reader.keep_partial


def test_progress_written_by_the_audio_thread_reads_back_consistently():
    track, reader = one_zone()
    track.how = HowToPlay(Priority.EMERGENCY, "none", 0.5)
    assert (track.t_started, track.t_first_audio, track.ended, track.played_out) == (None, None, False, False)
    reader.started(10.0)
    reader.first_audio(10.5)
    reader.first_audio(11.0)  # only the first one counts
    reader.underflowed()
    reader.underflowed()
    reader.failed("AudioError: lost")
    reader.failed("AudioError: still lost")  # the first error is the one reported
    reader.finished(12.0, played_out=False)
    assert (track.t_started, track.t_first_audio, track.t_ended) == (10.0, 10.5, 12.0)
    assert track.ended and not track.played_out and reader.play.underflows == 2
    assert track.error == "AudioError: lost" and track.how.gain == 0.5


def test_ready_and_the_start_threshold():
    track, reader = one_zone()
    track.set_start_threshold(500)
    assert track.start_threshold == 500
    track.put(ramp(0, 400))
    assert not reader.ready(500) and reader.ready(400)
    track.close()
    assert reader.ready(500)  # the source ended: whatever is there is all there is


def woken_by(wake) -> bool:
    """Whether an audio thread waiting on a track for 1000 samples wakes when this thread calls `wake`."""
    (track, reader), woke = one_zone(), []
    waiter = threading.Thread(target=lambda: woke.append(reader.wait(1000, timeout=60)))
    waiter.start()
    wake(track)
    waiter.join(30)  # a lost wake-up would leave it waiting out its 60 s
    return not waiter.is_alive() and woke == [True]


def test_wait_wakes_on_enough_samples_on_a_cut_and_on_the_end_and_times_out_otherwise():
    assert one_zone()[1].wait(100, timeout=0) is False
    assert woken_by(lambda track: track.put(ramp(0, 1000)))
    assert woken_by(lambda track: track.cut())
    assert woken_by(lambda track: track.close())


def test_every_zone_reads_the_same_samples_at_its_own_pace_and_they_are_kept_until_all_took_them():
    track = Track("a")
    track.attach(("hall", "platform"))
    hall, platform = TrackReader(track, "hall"), TrackReader(track, "platform")
    track.put(ramp(0, 1000))
    np.testing.assert_array_equal(hall.take(600)[0], ramp(0, 600))
    assert (track.taken, track.available) == (0, 1000)  # the slowest zone has taken nothing yet
    np.testing.assert_array_equal(platform.take(300)[0], ramp(0, 300))
    np.testing.assert_array_equal(platform.take(400)[0], ramp(300, 700))
    assert (track.taken, track.available) == (600, 400)
    track.close()
    np.testing.assert_array_equal(hall.take(1000)[0], ramp(600, 1000))
    np.testing.assert_array_equal(platform.take(1000)[0], ramp(700, 1000))
    assert track._chunks == type(track._chunks)()  # nothing held once every zone took it


def test_a_play_ends_when_its_last_zone_ended_and_fails_only_when_every_zone_failed():
    track = Track("a")
    track.attach(("hall", "platform"))
    hall, platform = TrackReader(track, "hall"), TrackReader(track, "platform")
    hall.started(1.0)
    platform.started(1.5)
    platform.failed("AudioError: snapserver went away")
    platform.finished(2.0, played_out=True)  # a failed zone never counts as played out
    assert track.t_started == 1.0 and not track.ended and track.error is None
    hall.finished(3.0, played_out=True)
    zones = track.zones()
    assert track.ended and track.t_ended == 3.0 and track.played_out and track.error is None
    assert (zones["hall"].played_out, zones["platform"].played_out) == (True, False)
    assert zones["platform"].error == "AudioError: snapserver went away"
    both = Track("b")
    for zone in ("hall", "platform"):
        TrackReader(both, zone).failed(f"AudioError: {zone} lost")
        TrackReader(both, zone).finished(1.0, played_out=False)
    assert both.error == "AudioError: hall lost" and not both.played_out


def test_end_at_is_refused_once_any_zone_played_past_it():
    track = Track("a")
    track.attach(("hall", "platform"))
    track.put(ramp(0, 1000))
    TrackReader(track, "hall").take(700)
    assert not track.end_at(600)
    assert track.end_at(800)
    block, last = TrackReader(track, "platform").take(2000)
    np.testing.assert_array_equal(block, ramp(0, 800))
    assert last and track.received == 800
