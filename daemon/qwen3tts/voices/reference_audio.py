"""An operator's reference recording: any format libsndfile reads (WAV, FLAC, Ogg/Vorbis, MP3...).

Channels are averaged to mono. The 24 kHz resampling that the speaker encoder and the speech tokenizer
expect happens in the caller (runtime/speaker.py `resample_to_speaker_rate`, soxr as the official code).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

from qwen3tts.errors import AudioError

MIN_SECONDS = 1.0  # shorter is no usable voice
MAX_SECONDS = 30.0  # reference codes become prompt positions: 30 s = 375 positions per request


def read_reference_audio(path: Path) -> tuple[np.ndarray, int]:
    """(float32 mono samples in [-1, 1], sample rate) of an audio file; AudioError names the problem."""
    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)  # (frames, channels)
    except (OSError, RuntimeError, soundfile.LibsndfileError) as exc:
        raise AudioError(f"{path}: cannot read audio ({exc})") from None
    wave = samples.mean(axis=1, dtype=np.float64).astype(np.float32)
    seconds = wave.shape[0] / rate if rate else 0.0
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise AudioError(
            f"{path}: reference audio is {seconds:.1f} s long; "
            f"use {MIN_SECONDS:g} to {MAX_SECONDS:g} s of speech"
        )
    if not np.isfinite(wave).all():
        raise AudioError(f"{path}: reference audio contains NaN or infinite samples")
    return wave, int(rate)
