"""`audio.wav_realtime`: the WAV sink paced like a loudspeaker (each write returns when it would have been
heard), and unpaced by default; the file holds the same samples either way."""

from __future__ import annotations

import wave

import numpy as np
from audio_fakes import FakeClock

from qwen3tts.appliance.audio.sinks import MODEL_RATE, WavSink


def write_one_second(sink: WavSink) -> None:
    sink.begin("paced")
    for _ in range(25):
        sink.write(np.full(MODEL_RATE // 25, 0.25, np.float32))  # 25 blocks of 40 ms
    sink.end()


def test_a_realtime_wav_sink_takes_as_long_as_the_audio_and_says_it_is_paced(tmp_path):
    clock = FakeClock()
    sink = WavSink(tmp_path, realtime=True, clock=clock, sleep=clock.sleep)
    start = clock()
    write_one_second(sink)
    assert sink.paced and "real time" in sink.name
    assert abs((clock() - start) - 1.0) < 1e-9  # one second of audio, one second of (fake) time


def test_the_default_wav_sink_does_not_wait_and_both_write_the_same_file(tmp_path):
    clock = FakeClock()
    fast = WavSink(tmp_path / "fast", clock=clock, sleep=clock.sleep)
    write_one_second(fast)
    assert not fast.paced and clock.sleeps == []
    paced = WavSink(tmp_path / "paced", realtime=True, clock=clock, sleep=clock.sleep)
    write_one_second(paced)
    frames = []
    for path in (fast.paths[0], paced.paths[0]):
        with wave.open(str(path)) as wav:
            frames.append(wav.readframes(wav.getnframes()))
    assert frames[0] == frames[1] and len(frames[0]) == 2 * MODEL_RATE
