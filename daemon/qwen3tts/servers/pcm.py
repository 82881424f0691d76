"""Engine PCM (float32 in [-1, 1]) -> the bytes network clients get: 16-bit little-endian, mono."""

from __future__ import annotations

import struct

import numpy as np

SAMPLE_WIDTH = 2  # bytes: 16-bit
CHANNELS = 1
_UNKNOWN_SIZE = 0xFFFFFFFF  # streamed WAV: the length is not known when the header goes out


def to_s16le(samples: np.ndarray) -> bytes:
    """16-bit signed little-endian PCM, clipped (what the WAV sink writes, too)."""
    return np.round(np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def streaming_wav_header(rate: int) -> bytes:
    """A 44-byte RIFF/WAVE header for 16-bit mono PCM of unknown length.

    The RIFF and data sizes are 0xFFFFFFFF, the usual convention for a stream: players (ffmpeg, sox,
    browsers, Python's `wave` after reading what arrives) read until the connection closes.
    """
    byte_rate = rate * CHANNELS * SAMPLE_WIDTH
    return (
        b"RIFF"
        + struct.pack("<I", _UNKNOWN_SIZE)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, CHANNELS, rate, byte_rate, CHANNELS * SAMPLE_WIDTH, 8 * SAMPLE_WIDTH)
        + b"data"
        + struct.pack("<I", _UNKNOWN_SIZE)
    )
