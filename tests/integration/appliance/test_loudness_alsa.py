"""Even loudness on the real PortAudio -> ALSA path, captured by an ALSA `file` PCM (test_audio_alsa.py's
rig): what reaches the device, resampled to its own rate, is measured with pyloudnorm at that rate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from loudness_plays import compare, lufs
from test_audio_alsa import asound_conf

from qwen3tts.appliance.audio.limiter import true_peak

CHILD = Path(__file__).with_name("alsa_loudness_child.py")
TARGET = -20.0


def test_what_reaches_the_device_is_at_the_target_and_under_the_ceiling(tmp_path):
    rng = np.random.default_rng(21)
    square = np.sign(np.sin(2 * np.pi * 440 * np.arange(48000) / 24000)).astype(np.float32)
    signals = {"quiet": np.concatenate([compare.speechlike(3, -36, rng) for _ in range(2)]), "full": square}
    np.savez(tmp_path / "signals.npz", **signals)
    env = {**os.environ, "ALSA_CONFIG_PATH": str(asound_conf(tmp_path))}
    proc = subprocess.run([sys.executable, str(CHILD), "ttsfile", str(tmp_path / "signals.npz"), str(TARGET)],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, f"child failed:\n{proc.stderr}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    rate = report["rate"]
    frames = np.fromfile(tmp_path / "capture.raw", dtype="<f4").reshape(-1, report["channels"])[:, 0]
    split = round(report["written"]["quiet"] * rate / 24000)
    quiet, full = frames[:split], frames[split:]
    assert len(full) > rate  # both plays reached the device
    loudness = lufs(quiet, rate)
    assert abs(loudness - TARGET) <= 1.0, f"{loudness:.2f} LUFS at {rate} Hz"
    assert 20 * np.log10(true_peak(full)) <= -1.0 + 0.2  # the resampler may add a little; not a clip
