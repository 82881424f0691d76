"""The look-ahead's arithmetic: the start threshold (jitter buffer vs the predicted shortfall of a slow
stream), a piece's expected length (from its text until it is complete, then measured), and which piece
the playback position is in. All sizes in 24 kHz samples (1 ms = 24 samples)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from announcer_fakes import FOUR, TurnRig

from qwen3tts.appliance.announcements.pace import chunk_gap, jitter_threshold
from qwen3tts.engine.stats import EngineStats

MS = 24


@pytest.mark.parametrize(
    ("jitter_ms", "duration", "rtf", "expected_ms"),
    [
        (300, None, None, 300),
        (300, 10.0, None, 300),
        (300, 10.0, 0.5, 300),  # faster than real time: the floor
        (300, 10.0, 2.0, 5000),  # half speed: half of the 10 s must be in hand
        (0, 1.0, 4.0, 750),
        (100, 0.05, 3.0, 100),
        (300, 10.0, 0.0, 300),  # no measurement yet
    ],
)
def test_jitter_threshold_is_the_larger_of_the_floor_and_the_predicted_shortfall(
    jitter_ms, duration, rtf, expected_ms
):
    assert jitter_threshold(jitter_ms, duration, rtf) == expected_ms * MS


@pytest.mark.parametrize(
    ("duration", "rtf", "waits", "expected_ms"),
    [
        (10.0, 2.0, 1.0, 5500),  # half of 10 s, and the 1 s of prefills the sentences still wait for, at 2x
        (4.0, 1.0, 0.9, 900),  # at real time only the waits are short
        (10.0, 0.5, 1.0, 1000),  # twice real time: it gets ahead over the play, not before the first wait
        (10.0, 0.5, 0.2, 300),  # a short wait stays under the floor
    ],
)
def test_the_prefills_still_to_come_add_to_the_shortfall(duration, rtf, waits, expected_ms):
    assert jitter_threshold(300, duration, rtf, waits) == expected_ms * MS


@pytest.mark.parametrize(
    ("duration", "rtf", "waits", "gap", "expected_ms"),
    [
        (10.0, 0.9, 0.0, 1.0, 1000),  # a little faster than real time: still one chunk's wait in hand
        (10.0, 2.0, 1.0, 1.0, 6500),  # slower: the shortfall, then one chunk's wait on top
        (10.0, 0.5, 0.0, 0.2, 300),  # a short wait stays under the floor
        (10.0, None, 0.0, 1.0, 300),  # no speed measured yet: the floor
    ],
)
def test_the_wait_between_two_codec_chunks_is_held_on_top_of_the_shortfall(
    duration, rtf, waits, gap, expected_ms
):
    assert jitter_threshold(300, duration, rtf, waits, gap) == expected_ms * MS


def test_the_wait_between_chunks_is_measured_from_a_piece_s_second_chunk_on():
    assert chunk_gap(None, None, 5.0) == (None, 5.0)  # a first chunk waited on its prefill: not a gap
    assert chunk_gap(None, 5.0, 6.0) == (1.0, 6.0)
    average, last = chunk_gap(1.0, 6.0, 6.5)
    assert 0.5 < average < 1.0 and last == 6.5


def test_the_threshold_holds_the_measured_wait_between_a_sentence_s_chunks(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", FOUR)
    rig.turn()
    first = rig.engine.of("a")[0]
    first.produce(np.ones(2400, np.float32))
    rig.turn()
    assert rig.lookahead.chunk_gap_s is None  # one chunk: nothing to measure yet
    arrived = rig.play("a").pieces[0].last_pcm_at
    first.produce(np.ones(2400, np.float32))
    rig.turn()
    gap_s = rig.lookahead.chunk_gap_s
    assert gap_s == pytest.approx(rig.play("a").pieces[0].last_pcm_at - arrived) and gap_s > 0
    ann = rig.play("a")
    rig.lookahead.engine = StatsEngine(running=1, frames_per_second=25.0)  # twice real time: the floor
    rig.lookahead.chunk_gap_s = 1.0  # (as a 12-frame chunk takes at about real time)
    assert rig.lookahead.start_threshold(ann) == 1000 * MS


def test_the_threshold_counts_the_sentences_not_started_and_the_slower_speed_known(tmp_path):
    rig = TurnRig(tmp_path, lookahead_s=0.0)  # one sentence at a time: three wait for their prefill
    rig.say("a", FOUR)
    rig.turn()
    ann = rig.play("a")
    assert [p.handle is not None for p in ann.pieces] == [True, False, False, False]
    whole_s = sum(rig.lookahead.estimate(ann, i) for i in range(4))
    rig.lookahead.first_pcm_s = 0.5
    rig.lookahead.engine = StatsEngine(running=1, frames_per_second=6.25)  # the stream now: rtf 2
    rig.lookahead.rtf = 1.5  # sentences as measured: faster than the stream now
    assert rig.lookahead.start_threshold(ann) == jitter_threshold(300, whole_s, 2.0, 3 * 0.5)
    rig.lookahead.rtf = 4.0  # ... or slower (a codec chunk the stream's first steps did not pay yet)
    assert rig.lookahead.start_threshold(ann) == jitter_threshold(300, whole_s, 4.0, 3 * 0.5)


def test_the_wait_for_a_sentence_s_first_audio_is_measured_from_its_submission(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", FOUR)
    rig.turn()
    assert rig.lookahead.first_pcm_s is None
    first = rig.engine.of("a")[0]
    submitted = rig.play("a").pieces[0].submitted_at
    assert submitted is not None
    first.produce(np.ones(2400, np.float32))
    rig.turn()
    arrived = rig.play("a").pieces[0].arriving_since
    assert rig.lookahead.first_pcm_s == pytest.approx(arrived - submitted) and arrived >= submitted


class StatsEngine:
    """An engine that reports given live figures."""

    def __init__(self, running: int, frames_per_second: float):
        self.figures = EngineStats(running, 0, 0, 0, frames_per_second, 4, 0)

    def stats(self) -> EngineStats:
        return self.figures


def test_the_start_threshold_covers_the_whole_play_at_one_stream_s_speed_now_until_it_is_complete(tmp_path):
    rig = TurnRig(tmp_path)
    audio = replace(rig.settings.audio, jitter_buffer_ms=200)
    rig.lookahead.settings = replace(rig.settings, audio=audio)
    rig.say("a", FOUR)
    rig.turn()
    ann = rig.play("a")
    whole_s = sum(rig.lookahead.estimate(ann, i) for i in range(4))
    rig.lookahead.engine = StatsEngine(running=4, frames_per_second=25.0)  # 4 streams at 1/2 real time
    assert rig.lookahead.stream_rtf() == pytest.approx(2.0)
    # half of everything it will say must be in hand, not half of its first sentence
    assert rig.lookahead.start_threshold(ann) == jitter_threshold(200, whole_s, 2.0) > 4 * 200 * MS
    rig.lookahead.engine = StatsEngine(running=1, frames_per_second=25.0)  # one stream at 2x real time
    assert rig.lookahead.start_threshold(ann) == 200 * MS
    rig.lookahead.engine = rig.engine
    rig.engine.of("a")[0].finish(np.ones(4800, np.float32))  # its first piece: 0.2 s, measured
    rig.turn()
    rig.lookahead.engine = StatsEngine(running=4, frames_per_second=25.0)
    rest_s = sum(rig.lookahead.estimate(ann, i) for i in range(1, 4))
    assert rig.lookahead.start_threshold(ann) == jitter_threshold(200, 0.2 + rest_s, 2.0)
    rig.lookahead.engine = rig.engine
    rig.engine.speak_all()
    rig.turn()
    rig.lookahead.engine = StatsEngine(running=4, frames_per_second=25.0)
    assert rig.lookahead.start_threshold(ann) == 200 * MS  # all of it is there


def test_a_piece_s_length_is_estimated_from_its_text_and_measured_once_complete(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", FOUR)
    rig.turn()
    ann = rig.play("a")
    guesses = [rig.lookahead.estimate(ann, i) for i in range(4)]
    assert guesses[2] > guesses[0] > 1.0  # "part three" is longer than "part one"
    first, second, *_ = rig.engine.of("a")
    first.finish(np.ones(12000, np.float32))
    second.finish(np.ones(36000, np.float32))
    rig.turn()
    assert [rig.lookahead.estimate(ann, i) for i in range(3)] == [0.5, 1.5, guesses[2]]


def test_the_piece_playing_is_the_first_one_not_fully_played(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", FOUR)
    rig.turn()
    ann = rig.play("a")
    for handle in rig.engine.of("a")[:2]:
        handle.finish(np.ones(1920, np.float32))
    rig.turn()
    assert ann.ends == [1920, 3840] and rig.lookahead.piece_playing(ann) == 0
    positions = []
    while ann.track.available:
        rig.playback.block()
        positions.append((ann.track.taken, rig.lookahead.piece_playing(ann)))
    assert positions == [(960, 0), (1920, 1), (2880, 1), (3840, 2)]
