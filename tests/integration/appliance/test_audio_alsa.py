"""The real PortAudio -> ALSA path, captured by an ALSA `file` PCM (no sound card needed).

An asound.conf defines `pcm.ttsfile { type file; slave.pcm "null"; file <tmp>/capture.raw;
format "raw" }`; the file plugin writes exactly what its slave receives. The sink opens the device
at its default rate (PortAudio reports 44100 Hz for these plugin PCMs, so the 24 kHz -> 44.1 kHz
soxr path is exercised, not a trivial x2), mono float32, so capture.raw is little-endian float32
frames at `rate` with `channels` interleaved, both reported by the child. The null slave consumes
instantly: nothing here asserts real-time pacing.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soxr

CHILD = Path(__file__).with_name("alsa_child.py")
RATE = 24000
LEAD_IN = TAIL = RATE // 10  # the child plays with lead_in_ms = tail_ms = 100, fade_ms = 0


def asound_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "asound.conf"
    conf.write_text(
        "</usr/share/alsa/alsa.conf>\n"
        f'pcm.ttsfile {{ type file; slave.pcm "null"; file "{tmp_path / "capture.raw"}"; format "raw" }}\n'
        "pcm.ttsnull { type null }\n"
    )
    return conf


def known_signals() -> dict[str, np.ndarray]:
    t = np.arange(int(0.6 * RATE)) / RATE
    chirp = 0.5 * np.sin(2 * np.pi * (300 * t + 800 * t**2))  # sweeps 300 -> ~1260 Hz
    noise = 0.2 * np.random.default_rng(7).standard_normal(int(0.35 * RATE))
    return {"first": chirp.astype(np.float32), "second": noise.astype(np.float32)}


def run_child(tmp_path: Path, signals: dict[str, np.ndarray]) -> dict:
    if ctypes.util.find_library("portaudio") is None:
        pytest.fail(
            "libportaudio2 is not installed (apt-get install libportaudio2); ALSA output needs it",
            pytrace=False,
        )
    np.savez(tmp_path / "signals.npz", **signals)
    env = {**os.environ, "ALSA_CONFIG_PATH": str(asound_conf(tmp_path))}
    proc = subprocess.run(
        [sys.executable, str(CHILD), "ttsfile", str(tmp_path / "signals.npz"), str(tmp_path / "wav")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"child failed:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("alsa")
    signals = known_signals()
    report = run_child(tmp_path, signals)
    raw = np.fromfile(tmp_path / "capture.raw", dtype="<f4")
    return report, signals, raw


def expected_capture(signals: dict[str, np.ndarray], rate: int) -> np.ndarray:
    """Each announcement resampled on its own (the sink flushes its resampler at every end)."""
    parts = []
    for name in ("first", "second"):
        at_24k = np.concatenate([np.zeros(LEAD_IN, np.float32), signals[name], np.zeros(TAIL, np.float32)])
        parts.append(soxr.resample(at_24k, RATE, rate, quality="HQ"))
    return np.concatenate(parts)


def test_the_device_is_found_by_name_and_opened_at_its_own_rate(played):
    report, _, _ = played
    assert "ttsfile" in report["devices"] and "ttsnull" in report["devices"]
    assert report["name"].startswith("alsa:ttsfile@") and report["rate"] != RATE
    assert report["channels"] == 1 and report["latency"] > 0
    assert report["states"][0][0] == "ok"


def test_the_captured_audio_is_the_resampled_announcements_sample_for_sample(played):
    report, signals, raw = played
    frames = raw.reshape(-1, report["channels"])[:, 0]  # (frames, channels) -> first channel
    expected = expected_capture(signals, report["rate"])
    assert len(frames) == len(expected), f"captured {len(frames)} frames, expected {len(expected)}"
    diff = np.abs(frames - expected).max()
    print(f"max |capture - expected| = {diff:.2e} at {report['rate']} Hz")
    assert diff < 1e-5


def test_each_announcement_is_reported_finished_in_order(played):
    report, _, _ = played
    assert report["events"] == [
        ["started", "first", None],
        ["first_audio", "first", None],
        ["finished", "first", None],
        ["started", "second", None],
        ["first_audio", "second", None],
        ["finished", "second", None],
    ]
    assert report["underflows"] == 0


def test_a_missing_device_is_a_named_audio_error_and_auto_falls_back_to_wav_files(played):
    report, _, _ = played
    expected = "AudioError: no usable output device matching 'no-such-speaker'"
    assert report["missing_device"].startswith(expected)
    assert report["auto_fallback"] == "WavSink"
