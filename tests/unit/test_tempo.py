"""Speed by time-scale modification: the duration scales, the pitch stays, no clicks, streamed."""

from __future__ import annotations

import numpy as np
import pytest

from qwen3tts.tempo import TimeStretch

RATE, CHUNK, F0 = 24000, 1920, 140.0


def vowel(seconds: float = 3.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return sum(0.3 / k * np.sin(2 * np.pi * k * F0 * t + k) for k in range(1, 9)).astype(np.float32)


def stretch(x: np.ndarray, speed: float) -> np.ndarray:
    tempo = TimeStretch(speed, RATE)
    parts = [tempo.push(x[i : i + CHUNK]) for i in range(0, len(x), CHUNK)]
    return np.concatenate([*parts, tempo.finish()])


def fundamental(x: np.ndarray) -> float:
    mid = x[len(x) // 4 : 3 * len(x) // 4]
    spectrum = np.abs(np.fft.rfft(mid * np.hanning(len(mid))))
    freqs = np.fft.rfftfreq(len(mid), 1 / RATE)
    band = (freqs > 80) & (freqs < 200)
    return float(freqs[band][np.argmax(spectrum[band])])


@pytest.mark.parametrize("speed", [0.25, 0.5, 1.5, 2.0, 4.0])
def test_duration_scales_and_pitch_stays(speed):
    x = vowel()
    y = stretch(x, speed)
    assert len(y) / len(x) == pytest.approx(1 / speed, rel=0.06)  # the flushed tail plays at speed 1
    assert fundamental(y) == pytest.approx(F0, abs=3)


@pytest.mark.parametrize("speed", [0.5, 2.0])
def test_no_clicks(speed):
    x = vowel()
    y = stretch(x, speed)[RATE // 10 : -RATE // 10]
    # a splice without crossfade jumps: the largest second difference grows; a smooth one stays
    assert np.max(np.abs(np.diff(y, 2))) < 1.5 * np.max(np.abs(np.diff(x, 2)))


def test_out_of_range_speeds_are_refused_and_close_is_idempotent():
    with pytest.raises(ValueError, match=r"0\.25 and 4\.0"):
        TimeStretch(4.5, RATE)
    tempo = TimeStretch(2.0, RATE)
    tempo.close()
    tempo.close()
    assert tempo.push(vowel(0.1)).size == 0 and tempo.finish().size == 0
