"""Playback of one announcement into a recording sink: order, exact lengths, fades, volume, interrupt,
finished timing, jitter buffer and underflows. All sizes in 24 kHz samples (1 ms = 24 samples)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from audio_fakes import FakeClock, FakeSink
from qwen3tts.appliance.audio.jitter import PcmBuffer, jitter_threshold

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback, Track
from qwen3tts.errors import AudioError
from qwen3tts.settings import AudioSettings

MS = 24  # samples per millisecond at 24 kHz
SETTINGS = AudioSettings(lead_in_ms=50, tail_ms=20, fade_ms=10, block_ms=10, jitter_buffer_ms=0)
CHIME = np.full(1000, 0.5, dtype=np.float32)  # a flat 'chime' is easy to find in the output


def chunks(total: int, size: int = 1000, value: float = 0.25):
    for start in range(0, total, size):
        yield np.full(min(size, total - start), value, dtype=np.float32)


def track(label: str, source=(), **fields) -> Track:
    """A track whose buffer gets `source` from a thread standing in for the announcer."""
    buffer = PcmBuffer()

    def fill():
        for chunk in source:
            buffer.put(chunk)
        buffer.close()

    threading.Thread(target=fill, daemon=True).start()
    return Track(label, buffer, **fields)


def make(sink=None, settings=SETTINGS, chimes=None, clock=None):
    clock = clock or (sink.clock if sink else FakeClock())
    sink = sink or FakeSink(clock=clock)
    chimes = chimes or ChimeSet({"normal": CHIME, "priority": None, "emergency": CHIME})
    playback = Playback(sink, settings, chimes, clock=clock, sleep=clock.sleep)
    return playback, sink


def test_an_announcement_is_chime_then_lead_in_then_speech_then_tail_with_exact_lengths():
    playback, sink = make()
    t = track("a", chunks(4800))
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
    assert [e[0] for e in sink.events] == ["begin", "end"]


def test_no_chime_for_a_priority_without_one_and_none_when_the_announcement_says_none():
    playback, sink = make()
    playback.play(track("p", chunks(2400), priority="priority"))
    playback.play(track("n", chunks(2400), chime="none"))
    for item in ("p", "n"):
        assert len(sink.played(item)) == 50 * MS + 2400 + 20 * MS
        assert not sink.played(item)[: 50 * MS].any()


def test_speech_fades_in_and_out_over_10_ms():
    playback, sink = make(chimes=ChimeSet.silent())
    playback.play(track("f", chunks(4800, value=0.5)))
    speech = sink.played("f")[50 * MS : 50 * MS + 4800] / 0.5
    n = 10 * MS
    np.testing.assert_allclose(speech[:n], np.arange(n) / n, atol=1e-6)  # 0 .. (n-1)/n
    np.testing.assert_allclose(speech[-n:], (n - 1 - np.arange(n)) / n, atol=1e-6)  # .. 1/n, 0
    assert speech[-1] == 0.0 and speech[n] == 1.0


def test_volume_scales_chime_and_speech_and_mute_silences_all_but_emergency():
    settings = AudioSettings(**{**SETTINGS.__dict__, "volume": 0.5, "muted": False})
    playback, sink = make(settings=settings)
    playback.play(track("v", chunks(4800, value=0.8), volume=0.5))
    out = sink.played("v")
    np.testing.assert_allclose(out[: len(CHIME)], CHIME * 0.25)
    np.testing.assert_allclose(out[len(CHIME) + 50 * MS + 500], 0.8 * 0.25, rtol=1e-6)

    playback.muted = True
    playback.play(track("m", chunks(4800, value=0.8)))
    assert len(sink.played("m")) == len(CHIME) + 50 * MS + 4800 + 20 * MS and not sink.played("m").any()

    playback.play(track("e", chunks(4800, value=0.8), priority="emergency"))
    out = sink.played("e")  # emergency ignores mute and the master volume: full scale
    np.testing.assert_allclose(out[: len(CHIME)], CHIME)
    np.testing.assert_allclose(out[len(CHIME) + 50 * MS + 500], 0.8, rtol=1e-6)


def test_a_cut_fades_out_within_one_block_and_skips_the_tail():
    block = 10 * MS
    buffer = PcmBuffer()
    buffer.put(np.full(48000, 0.5, dtype=np.float32))  # far more than will play; never closed
    cut = Track("long", buffer)

    def cut_on_third_speech_block(sink, write):
        if len([w for w in sink.writes if w.samples.any()]) == 3:
            cut.cut()

    playback, sink = make(sink=FakeSink(on_write=cut_on_third_speech_block), chimes=ChimeSet.silent())
    playback.play(cut)
    speech = [w.samples for w in sink.writes if w.samples.any()]
    assert [len(s) for s in speech] == [block, block, block, 10 * MS]  # then one fade block, no tail
    fade = speech[-1] / 0.5
    assert fade[0] > 0.9 and fade[-1] == 0.0 and np.all(np.diff(fade) < 0)
    assert sink.writes[-1].samples[-1] == 0.0
    assert cut.ended and not cut.played_out and cut.error is None


def test_the_end_comes_stream_latency_after_the_last_write_once_the_sink_drained():
    clock = FakeClock()
    sink = FakeSink(clock=clock, latency_s=0.25, paced=True, real_delay_s=0.0005)
    playback, sink = make(sink=sink, chimes=ChimeSet.silent())
    t = track("t", chunks(4800))
    playback.play(t)
    last_write = sink.writes[-1].t_after
    assert t.played_out and t.t_ended == pytest.approx(last_write + 0.25)
    assert clock.sleeps == [pytest.approx(0.25)]  # waited for the audio still in flight
    assert sink.events[-1][0] == "end" and sink.events[-1][2] <= t.t_ended
    assert t.t_first_audio == next(w.t_after for w in sink.writes if w.samples.any())


@pytest.mark.parametrize(
    ("jitter_ms", "duration", "rtf", "expected_ms"),
    [
        (300, None, None, 300),
        (300, 10.0, None, 300),
        (300, 10.0, 0.5, 300),
        (300, 10.0, 2.0, 5000),
        (0, 1.0, 4.0, 750),
        (100, 0.05, 3.0, 100),
    ],
)
def test_jitter_threshold_is_the_larger_of_the_floor_and_the_predicted_shortfall(
    jitter_ms, duration, rtf, expected_ms
):
    assert jitter_threshold(jitter_ms, duration, rtf) == expected_ms * MS


@pytest.mark.parametrize("threshold_s", [0.1, 0.5])
def test_speech_waits_until_the_start_threshold_is_buffered(threshold_s):
    produced = []

    def slow_source():
        for _ in range(20):  # 20 x 2400 = 2 s of speech, 10 ms of wall time per 100 ms of audio
            time.sleep(0.01)
            produced.append(2400)
            yield np.full(2400, 0.5, dtype=np.float32)

    at_first_speech = []

    def note(sink, write):
        if write.samples.any() and not at_first_speech:
            at_first_speech.append(sum(produced))

    settings = AudioSettings(**{**SETTINGS.__dict__, "lead_in_ms": 0})
    playback, _sink = make(sink=FakeSink(on_write=note), settings=settings, chimes=ChimeSet.silent())
    playback.play(track("j", slow_source(), start_threshold=int(threshold_s * 24000)))
    assert at_first_speech[0] >= threshold_s * 24000
    assert at_first_speech[0] < 20 * 2400  # it did not simply wait for the end


def test_underflows_reported_by_the_sink_are_counted():
    playback, _sink = make(sink=FakeSink(underflow_on={3, 5}))
    t = track("u", chunks(4800))
    playback.play(t)
    assert playback.underflows == 2 and t.underflows == 2


def test_a_sound_card_gets_silence_and_an_underflow_is_counted_when_synthesis_falls_behind():
    resume = threading.Event()

    def stalling_source():
        yield np.full(2400, 0.5, dtype=np.float32)
        resume.wait(5)
        yield np.full(2400, 0.5, dtype=np.float32)

    def release_after_silence(sink, write):
        speech_seen = any(w.samples.any() for w in sink.writes)
        if speech_seen and not write.samples.any():
            resume.set()

    sink = FakeSink(paced=True, real_delay_s=0.001, on_write=release_after_silence)
    playback, sink = make(sink=sink, chimes=ChimeSet.silent())
    t = track("s", stalling_source())
    playback.play(t)
    assert t.played_out and t.underflows == 1 and playback.underflows == 1
    out = sink.played("s")
    speech = np.flatnonzero(out)
    gap = np.flatnonzero(out[speech[0] : speech[-1]] == 0)
    assert len(gap) >= 10 * MS  # a stretch of silence in the middle, not stutter
    assert speech[-1] - speech[0] + 1 >= 4800 - 2  # all speech played (minus the silent fade ends)


def test_a_sink_that_cannot_start_ends_the_track_with_the_error():
    playback, _sink = make(sink=FakeSink(fail_begin=AudioError("device lost")))
    t = track("d", chunks(2400))
    playback.play(t)
    assert t.ended and not t.played_out and "AudioError" in t.error


def test_empty_speech_still_plays_chime_lead_in_and_tail():
    playback, sink = make()
    t = track("e", iter([]))
    playback.play(t)
    assert t.played_out and len(sink.played("e")) == len(CHIME) + 50 * MS + 20 * MS
    assert t.t_first_audio is None


def test_the_audio_thread_plays_what_it_is_handed_and_beats_while_it_plays():
    beats = []
    sink = FakeSink(paced=True, real_delay_s=0.0005)
    playback = Playback(
        sink, SETTINGS, ChimeSet.silent(), heartbeat=lambda: beats.append(1), idle_tick_s=0.01
    )
    stop = threading.Event()
    worker = threading.Thread(target=playback.run, args=(stop,), daemon=True)
    worker.start()
    t = track("w", chunks(24000))
    playback.play_next(t)
    deadline = time.monotonic() + 10
    while not t.ended and time.monotonic() < deadline:
        time.sleep(0.005)
    stop.set()
    worker.join(5)
    assert t.played_out and len(sink.played("w")) == 50 * MS + 24000 + 20 * MS
    assert len(beats) >= (24000 // (10 * MS))  # at least one beat per block written
