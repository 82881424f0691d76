"""Playback of one track into a recording sink: order, exact lengths, fades, gain, cut, the time the end
is heard, the start threshold and underflows. All sizes in 24 kHz samples (1 ms = 24 samples).

`Playback.play()` runs on the test's thread; PCM that "arrives while it plays" is put into the track from
the sink's write callback, so every interleaving is fixed by the test (no threads, no sleeps)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from audio_fakes import FakeClock, FakeSink

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import AudioError
from qwen3tts.settings import AudioSettings

MS = 24  # samples per millisecond at 24 kHz
SETTINGS = AudioSettings(lead_in_ms=50, tail_ms=20, fade_ms=10, block_ms=10, jitter_buffer_ms=0)
CHIME = np.full(1000, 0.5, dtype=np.float32)  # a flat 'chime' is easy to find in the output


def track(label: str, samples: int = 4800, value: float = 0.25, close: bool = True, **how) -> Track:
    """A track already holding `samples` of flat speech (closed unless told otherwise)."""
    t = Track(label)
    t.how = HowToPlay(**how)
    for start in range(0, samples, 1000):
        t.put(np.full(min(1000, samples - start), value, dtype=np.float32))
    if close:
        t.close()
    return t


def make(sink=None, settings=SETTINGS, chimes=None):
    sink = sink or FakeSink()
    chimes = chimes or ChimeSet({"normal": CHIME, "priority": None, "emergency": CHIME})
    return Playback(
        sink, settings, chimes, clock=sink.clock, sleep=sink.clock.sleep, monotonic=sink.clock
    ), sink


def speech_writes(sink: FakeSink) -> list[np.ndarray]:
    return [w.samples for w in sink.writes if w.samples.any()]


def test_a_track_is_chime_then_lead_in_then_speech_then_tail_with_exact_lengths():
    playback, sink = make()
    t = track("a")
    playback.play(t)
    out = sink.played("a")
    lead, tail = 50 * MS, 20 * MS
    assert len(out) == len(CHIME) + lead + 4800 + tail
    np.testing.assert_array_equal(out[: len(CHIME)], CHIME)
    assert not out[len(CHIME) : len(CHIME) + lead].any()  # lead-in is silence
    speech = out[len(CHIME) + lead : len(CHIME) + lead + 4800]
    np.testing.assert_allclose(speech[10 * MS : -10 * MS], 0.25)  # between the fades: untouched
    assert not out[-tail:].any()
    assert t.played_out and t.error is None and t.t_started <= t.t_first_audio <= t.t_ended
    assert [e[0] for e in sink.events] == ["begin", "end"] and t.taken == 4800


def test_no_chime_for_a_priority_without_one_and_none_when_the_track_says_none():
    playback, sink = make()
    playback.play(track("p", 2400, priority=Priority.PRIORITY))
    playback.play(track("n", 2400, chime="none"))
    playback.play(track("borrowed", 2400, priority=Priority.PRIORITY, chime="emergency"))
    for item in ("p", "n"):
        assert len(sink.played(item)) == 50 * MS + 2400 + 20 * MS
        assert not sink.played(item)[: 50 * MS].any()
    np.testing.assert_array_equal(sink.played("borrowed")[: len(CHIME)], CHIME)


def test_speech_fades_in_and_out_over_10_ms():
    playback, sink = make(chimes=ChimeSet.silent())
    playback.play(track("f", value=0.5))
    speech = sink.played("f")[50 * MS : 50 * MS + 4800] / 0.5
    n = 10 * MS
    np.testing.assert_allclose(speech[:n], np.arange(n) / n, atol=1e-6)  # 0 .. (n-1)/n
    np.testing.assert_allclose(speech[-n:], (n - 1 - np.arange(n)) / n, atol=1e-6)  # .. 1/n, 0
    assert speech[-1] == 0.0 and speech[n] == 1.0


def test_the_gain_on_the_track_scales_chime_and_speech_and_zero_is_silence_of_the_same_length():
    playback, sink = make()
    playback.play(track("v", value=0.8, gain=0.25))
    out = sink.played("v")
    np.testing.assert_allclose(out[: len(CHIME)], CHIME * 0.25)
    np.testing.assert_allclose(out[len(CHIME) + 50 * MS + 500], 0.8 * 0.25, rtol=1e-6)
    playback.play(track("m", value=0.8, gain=0.0))
    assert len(sink.played("m")) == len(out) and not sink.played("m").any()


def test_a_gain_set_while_the_track_plays_reaches_the_next_block_ramped_over_it_without_a_step():
    block = 10 * MS
    t = track("g", 9600, value=0.5, gain=1.0)
    changed_at = []

    def turn_down(sink, write):  # the announcer sets a renderer's new volume while speech plays
        if write.samples.any() and not changed_at:
            changed_at.append(len(sink.writes))
            t.set_gain(0.25)

    playback, sink = make(sink=FakeSink(on_write=turn_down), chimes=ChimeSet.silent())
    playback.play(t)
    ramp = sink.writes[changed_at[0]].samples  # the block after the change: from 1.0 down to 0.25
    np.testing.assert_allclose(ramp, 0.5 * np.linspace(1.0, 0.25, block), rtol=1e-5)
    later = sink.writes[changed_at[0] + 1].samples
    np.testing.assert_allclose(later, 0.5 * 0.25, rtol=1e-6)  # then at the new gain
    assert t.how.gain == 0.25 and t.played_out


def test_a_cut_fades_out_within_one_block_and_skips_the_tail():
    block = 10 * MS
    cut = track("long", 48000, value=0.5, close=False)  # far more than will play; never closed

    def cut_on_third_speech_block(sink, write):
        if len(speech_writes(sink)) == 3:
            cut.cut()

    playback, sink = make(sink=FakeSink(on_write=cut_on_third_speech_block), chimes=ChimeSet.silent())
    playback.play(cut)
    speech = speech_writes(sink)
    assert [len(s) for s in speech] == [block, block, block, 10 * MS]  # then one fade block, no tail
    fade = speech[-1] / 0.5
    assert fade[0] > 0.9 and fade[-1] == 0.0 and np.all(np.diff(fade) < 0)
    assert sink.writes[-1].samples[-1] == 0.0
    assert cut.ended and not cut.played_out and cut.error is None


def test_a_track_cut_before_its_speech_ends_without_any():
    t = track("early")
    t.cut()
    playback, sink = make()
    playback.play(t)
    assert not sink.played("early")[len(CHIME) :].any() and t.ended and not t.played_out


def test_the_end_is_heard_the_stream_latency_after_the_last_write_once_the_sink_drained():
    clock = FakeClock()
    playback, sink = make(sink=FakeSink(clock=clock, latency_s=0.25, paced=True), chimes=ChimeSet.silent())
    t = track("t")
    playback.play(t)
    last_write = sink.writes[-1].t_after
    assert t.played_out and t.t_ended == last_write + 0.25
    assert clock.sleeps == [0.25]  # waited for the audio still in flight
    assert sink.events[-1][0] == "end" and sink.events[-1][2] <= t.t_ended
    assert t.t_first_audio == next(w.t_after for w in sink.writes if w.samples.any())


def test_speech_waits_until_the_start_threshold_is_buffered_while_a_sound_card_gets_silence():
    t = track("j", 0, value=0.5, close=False)
    t.set_start_threshold(4800)
    arrived = []

    def synthesis_arrives(sink, write):  # 20 ms of speech arrives per 10 ms block played
        if len(arrived) < 10:
            arrived.append(480)
            t.put(np.full(480, 0.5, np.float32))
        elif not t.closed:
            t.close()

    settings = AudioSettings(**{**SETTINGS.__dict__, "lead_in_ms": 0})
    sink = FakeSink(paced=True, on_write=synthesis_arrives)
    playback, sink = make(sink=sink, settings=settings, chimes=ChimeSet.silent())
    playback.play(t)
    first_speech = next(i for i, w in enumerate(sink.writes) if w.samples.any())
    assert first_speech == 10  # 10 blocks of silence until 10 x 480 = 4800 samples were there
    assert sum(len(s) for s in speech_writes(sink)) >= 4800 - 2 and t.zones()["default"].underflows == 0


def test_underflows_reported_by_the_sink_are_counted():
    playback, _sink = make(sink=FakeSink(underflow_on={3, 5}))
    t = track("u")
    playback.play(t)
    assert playback.underflows == 2 and t.zones()["default"].underflows == 2


def test_a_sound_card_gets_silence_and_an_underflow_is_counted_when_synthesis_falls_behind():
    t = track("s", 2400, value=0.5, close=False)

    def resume_after_silence(sink, write):
        if speech_writes(sink) and not write.samples.any() and not t.closed:
            t.put(np.full(2400, 0.5, dtype=np.float32))  # the rest arrives during the silence
            t.close()

    playback, sink = make(sink=FakeSink(paced=True, on_write=resume_after_silence), chimes=ChimeSet.silent())
    playback.play(t)
    assert t.played_out and t.zones()["default"].underflows == 1 and playback.underflows == 1
    out = sink.played("s")
    speech = np.flatnonzero(out)
    gap = np.flatnonzero(out[speech[0] : speech[-1]] == 0)
    assert len(gap) >= 10 * MS  # a stretch of silence in the middle, not stutter
    assert speech[-1] - speech[0] + 1 >= 4800 - 2  # all speech played (minus the silent fade ends)


def test_a_file_sink_waits_for_pcm_without_writing_silence(tmp_path):
    t = track("w", 2400, close=False)
    sink = FakeSink()
    writes_at_beat, fed = [-1], []

    def beat():  # a beat with no write since the last one: it waits for PCM (the announcer's turn)
        if len(sink.writes) == writes_at_beat[0] and not fed:
            fed.append(t.taken)
            t.put(np.full(2400, 0.25, np.float32))
            t.close()
        writes_at_beat[0] = len(sink.writes)

    playback = Playback(sink, SETTINGS, ChimeSet.silent(), clock=sink.clock, sleep=sink.clock.sleep,
                        heartbeat=beat)  # fmt: skip
    playback.play(t)
    assert (
        fed == [2160] and t.played_out and t.zones()["default"].underflows == 0 and t.taken == 4800
    )  # 240 + fade held back
    out = sink.played("w")[50 * MS : -20 * MS]
    assert len(out) == 4800 and np.count_nonzero(out) >= 4800 - 2  # no silence inside the speech


def test_a_sink_that_cannot_start_ends_the_track_with_the_error():
    playback, _sink = make(sink=FakeSink(fail_begin=AudioError("device lost")))
    t = track("d", 2400)
    playback.play(t)
    assert t.ended and not t.played_out and t.error == "AudioError: device lost"


def test_an_unexpected_exception_in_the_sink_ends_that_track_only_and_the_next_one_plays():
    playback, sink = make(sink=FakeSink(fail_begin=KeyError("bug")))
    broken = track("broken", 2400)
    playback.play(broken)
    sink.fail_begin = None
    after = track("after", 2400)
    playback.play(after)
    assert broken.ended and broken.error == "KeyError: 'bug'" and after.played_out


def test_empty_speech_still_plays_chime_lead_in_and_tail():
    playback, sink = make()
    t = track("e", 0)
    playback.play(t)
    assert t.played_out and len(sink.played("e")) == len(CHIME) + 50 * MS + 20 * MS
    assert t.t_first_audio is None


def test_the_audio_thread_plays_what_it_is_handed_and_beats_while_it_plays():
    beats, ended = [], threading.Event()
    sink = FakeSink(paced=True)
    playback = Playback(sink, SETTINGS, ChimeSet.silent(), clock=sink.clock, sleep=sink.clock.sleep,
                        heartbeat=lambda: beats.append(1), on_end=ended.set, idle_tick_s=0.01)  # fmt: skip
    stop = threading.Event()
    worker = threading.Thread(target=playback.run, args=(stop,), daemon=True)
    worker.start()
    t = track("w", 24000)
    playback.play_next(t)
    assert ended.wait(10)
    stop.set()
    worker.join(5)
    assert t.played_out and len(sink.played("w")) == 50 * MS + 24000 + 20 * MS
    assert len(beats) >= 24000 // (10 * MS)  # at least one beat per block written


def test_a_step_of_the_wall_clock_back_while_the_end_drains_does_not_hold_the_audio_thread():
    wall, steady = FakeClock(start=1_800_000_000.0), FakeClock()
    sink = FakeSink(clock=steady, latency_s=0.2)
    drain = sink.end

    def drain_then_ntp_steps_back(complete: bool = True) -> None:
        drain(complete)
        wall.advance(-3600.0)

    sink.end = drain_then_ntp_steps_back
    playback = Playback(sink, SETTINGS, ChimeSet.silent(), clock=wall, sleep=steady.sleep, monotonic=steady)
    t = track("a")
    playback.play(t)
    assert steady.sleeps == [pytest.approx(0.2)]  # the latency, not an hour and the latency
    assert t.played_out
