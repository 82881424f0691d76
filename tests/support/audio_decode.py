"""Encoded HTTP audio back to samples, the way a player would read it (tests only)."""

from __future__ import annotations

import io

import av
import numpy as np
import soundfile as sf

RATE = 24000


def decode(fmt: str, data: bytes) -> tuple[np.ndarray, int]:
    """(float samples, rate): libsndfile for what it reads as a stream (WAV, MP3, Ogg Opus), FFmpeg for
    ADTS AAC and for FLAC of unknown length (libsndfile wants FLAC's sample count); raw PCM as is."""
    if fmt == "pcm":
        return np.frombuffer(data, "<i2").astype(np.float32) / 32768, RATE
    if fmt in ("aac", "flac"):
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.audio[0]
            frames = np.concatenate([frame.to_ndarray().reshape(-1) for frame in container.decode(stream)])
            scale = 32768.0 if frames.dtype == np.int16 else 1.0  # FLAC decodes to 16-bit integers
            return frames.astype(np.float32) / scale, stream.codec_context.sample_rate
    with sf.SoundFile(io.BytesIO(data)) as file:
        return file.read(dtype="float32"), file.samplerate
