"""Playback of one announcement into a recording sink: order, exact lengths, fades, volume, interrupt,
finished timing, jitter buffer and underflows. All sizes in 24 kHz samples (1 ms = 24 samples)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from audio_fakes import FakeClock, FakeSink

from qwen3tts.appliance.chimes import ChimeSet
from qwen3tts.appliance.jitter import jitter_threshold
from qwen3tts.appliance.playback import Playback, PlaybackEvent, Utterance
from qwen3tts.errors import AudioError, RequestError
from qwen3tts.settings import AudioSettings

MS = 24  # samples per millisecond at 24 kHz
SETTINGS = AudioSettings(lead_in_ms=50, tail_ms=20, fade_ms=10, block_ms=10, jitter_buffer_ms=0)
CHIME = np.full(1000, 0.5, dtype=np.float32)  # a flat 'chime' is easy to find in the output


def chunks(total: int, size: int = 1000, value: float = 0.25):
    for start in range(0, total, size):
        yield np.full(min(size, total - start), value, dtype=np.float32)


def make(sink=None, settings=SETTINGS, chimes=None, clock=None):
    clock = clock or (sink.clock if sink else FakeClock())
    sink = sink or FakeSink(clock=clock)
    events: list[PlaybackEvent] = []
    chimes = chimes or ChimeSet({"normal": CHIME, "priority": None, "emergency": CHIME})
    playback = Playback(sink, settings, chimes, events.append, clock=clock, sleep=clock.sleep)
    return playback, sink, events


def test_an_announcement_is_chime_then_lead_in_then_speech_then_tail_with_exact_lengths():
    playback, sink, events = make()
    final = playback.play(Utterance("a", chunks(4800)))
    out = sink.played("a")
    lead, tail = 50 * MS, 20 * MS
    assert len(out) == len(CHIME) + lead + 4800 + tail
    np.testing.assert_array_equal(out[: len(CHIME)], CHIME)
    assert not out[len(CHIME) : len(CHIME) + lead].any()  # lead-in is silence
    speech = out[len(CHIME) + lead : len(CHIME) + lead + 4800]
    np.testing.assert_allclose(speech[10 * MS : -10 * MS], 0.25)  # between the fades: untouched
    assert not out[-tail:].any()
    assert [e.kind for e in events] == ["started", "first_audio", "finished"] and final is events[-1]
    assert [e[0] for e in sink.events] == ["begin", "end"]


def test_no_chime_for_a_priority_without_one_and_none_when_the_announcement_says_none():
    playback, sink, _ = make()
    playback.play(Utterance("p", chunks(2400), priority="priority"))
    playback.play(Utterance("n", chunks(2400), chime="none"))
    for item in ("p", "n"):
        assert len(sink.played(item)) == 50 * MS + 2400 + 20 * MS
        assert not sink.played(item)[: 50 * MS].any()


def test_speech_fades_in_and_out_over_10_ms():
    playback, sink, _ = make(chimes=ChimeSet.silent())
    playback.play(Utterance("f", chunks(4800, value=0.5)))
    speech = sink.played("f")[50 * MS : 50 * MS + 4800] / 0.5
    n = 10 * MS
    np.testing.assert_allclose(speech[:n], np.arange(n) / n, atol=1e-6)  # 0 .. (n-1)/n
    np.testing.assert_allclose(speech[-n:], (n - 1 - np.arange(n)) / n, atol=1e-6)  # .. 1/n, 0
    assert speech[-1] == 0.0 and speech[n] == 1.0


def test_volume_scales_chime_and_speech_and_mute_silences_all_but_emergency():
    settings = AudioSettings(**{**SETTINGS.__dict__, "volume": 0.5, "muted": False})
    playback, sink, _ = make(settings=settings)
    playback.play(Utterance("v", chunks(4800, value=0.8), volume=0.5))
    out = sink.played("v")
    np.testing.assert_allclose(out[: len(CHIME)], CHIME * 0.25)
    np.testing.assert_allclose(out[len(CHIME) + 50 * MS + 500], 0.8 * 0.25, rtol=1e-6)

    playback.muted = True
    playback.play(Utterance("m", chunks(4800, value=0.8)))
    assert len(sink.played("m")) == len(CHIME) + 50 * MS + 4800 + 20 * MS and not sink.played("m").any()

    playback.play(Utterance("e", chunks(4800, value=0.8), priority="emergency"))
    out = sink.played("e")  # emergency ignores mute and the master volume: full scale
    np.testing.assert_allclose(out[: len(CHIME)], CHIME)
    np.testing.assert_allclose(out[len(CHIME) + 50 * MS + 500], 0.8, rtol=1e-6)


def test_interrupt_fades_out_within_one_block_flushes_and_cancels_the_source():
    pulled, cancelled = [], []

    def endless():
        try:
            while True:
                pulled.append(1)
                yield np.full(480, 0.5, dtype=np.float32)
                time.sleep(0.001)
        finally:
            pulled.append("closed")

    block = 10 * MS

    def interrupt_on_third_speech_block(sink, write):
        speech_writes = [w for w in sink.writes if w.samples.any()]
        if len(speech_writes) == 3 and playback.current_id == "long":
            assert playback.interrupt(reason="barge-in")

    sink = FakeSink(on_write=interrupt_on_third_speech_block)
    playback, sink, _events = make(sink=sink, chimes=ChimeSet.silent())
    final = playback.play(Utterance("long", endless(), cancel_source=lambda: cancelled.append(True)))
    speech = [w.samples for w in sink.writes if w.samples.any()]
    assert [len(s) for s in speech] == [block, block, block, 10 * MS]  # then one fade block, no tail
    fade = speech[-1] / 0.5
    assert fade[0] > 0.9 and fade[-1] == 0.0 and np.all(np.diff(fade) < 0)
    assert sink.writes[-1].samples is not None and sink.writes[-1].samples[-1] == 0.0
    assert (final.kind, final.reason) == ("cancelled", "barge-in") and cancelled == [True]
    for _ in range(200):  # the feeder stops pulling from the source and closes it
        if pulled and pulled[-1] == "closed":
            break
        time.sleep(0.005)
    assert pulled[-1] == "closed"
    assert playback.current_id is None and not playback.interrupt()


def test_an_interrupt_for_another_id_is_ignored():
    playback, _sink, _events = make()
    assert not playback.interrupt("nobody")
    assert playback.play(Utterance("x", chunks(2400))).kind == "finished"


def test_finished_comes_stream_latency_after_the_last_write_once_the_sink_drained():
    clock = FakeClock()
    sink = FakeSink(clock=clock, latency_s=0.25, paced=True, real_delay_s=0.0005)
    playback, sink, events = make(sink=sink, chimes=ChimeSet.silent())
    final = playback.play(Utterance("t", chunks(4800)))
    last_write = sink.writes[-1].t_after
    assert final.kind == "finished" and final.t == pytest.approx(last_write + 0.25)
    assert clock.sleeps == [pytest.approx(0.25)]  # waited for the audio still in flight
    assert sink.events[-1][0] == "end" and sink.events[-1][2] <= final.t
    first_audio = next(e for e in events if e.kind == "first_audio")
    assert first_audio.t == next(w.t_after for w in sink.writes if w.samples.any())


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


@pytest.mark.parametrize(("rtf", "expected_s"), [(None, 0.1), (2.0, 0.5)])
def test_speech_waits_until_the_jitter_buffer_is_full(rtf, expected_s):
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

    settings = AudioSettings(**{**SETTINGS.__dict__, "jitter_buffer_ms": 100, "lead_in_ms": 0})
    playback, _sink, _ = make(sink=FakeSink(on_write=note), settings=settings, chimes=ChimeSet.silent())
    playback.play(Utterance("j", slow_source(), expected_duration_s=1.0, rtf=rtf))
    assert at_first_speech[0] >= expected_s * 24000
    assert at_first_speech[0] < 20 * 2400  # it did not simply wait for the end


def test_underflows_reported_by_the_sink_are_counted():
    playback, _sink, _events = make(sink=FakeSink(underflow_on={3, 5}))
    final = playback.play(Utterance("u", chunks(4800)))
    assert playback.underflows == 2 and final.underflows == 2


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
    playback, sink, _ = make(sink=sink, chimes=ChimeSet.silent())
    final = playback.play(Utterance("s", stalling_source()))
    assert final.kind == "finished" and final.underflows == 1 and playback.underflows == 1
    out = sink.played("s")
    speech = np.flatnonzero(out)
    gap = np.flatnonzero(out[speech[0] : speech[-1]] == 0)
    assert len(gap) >= 10 * MS  # a stretch of silence in the middle, not stutter
    assert speech[-1] - speech[0] + 1 >= 4800 - 2  # all speech played (minus the silent fade ends)


def test_a_failing_source_ends_the_announcement_with_an_error_event():
    def broken():
        yield np.full(2400, 0.5, dtype=np.float32)
        raise RequestError("decoder exploded")

    playback, sink, _events = make()
    final = playback.play(Utterance("b", broken()))
    assert final.kind == "error" and final.reason == "RequestError: decoder exploded"
    assert sink.played("b")[-1] == 0.0  # faded out, not cut


def test_a_sink_that_cannot_start_reports_an_error_and_stops_synthesis():
    cancelled = []
    playback, _sink, events = make(sink=FakeSink(fail_begin=AudioError("device lost")))
    final = playback.play(Utterance("d", chunks(2400), cancel_source=lambda: cancelled.append(1)))
    assert final.kind == "error" and "AudioError" in final.reason and cancelled == [1]
    assert [e.kind for e in events] == ["started", "error"]


def test_empty_speech_still_plays_chime_lead_in_and_tail():
    playback, sink, events = make()
    assert playback.play(Utterance("e", iter([]))).kind == "finished"
    assert len(sink.played("e")) == len(CHIME) + 50 * MS + 20 * MS
    assert "first_audio" not in [e.kind for e in events]
