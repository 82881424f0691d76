"""WAV files in and out, with the standard library only.

Reading handles what people actually have: 8/16/24/32-bit PCM and IEEE float (which the stdlib `wave`
module rejects), WAVE_FORMAT_EXTENSIBLE headers, any channel count (averaged to mono). Writing makes
16-bit mono PCM, what every player and the WAV sink expect.
"""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np

from qwen3tts.errors import AudioError

_PCM = 1
_IEEE_FLOAT = 3
_EXTENSIBLE = 0xFFFE


def write_wav(path: str | Path, samples: np.ndarray, rate: int) -> None:
    """16-bit mono PCM WAV of float samples in [-1, 1] (clipped)."""
    pcm = np.round(np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """(float32 mono samples, sample rate) of a RIFF/WAVE file; channels are averaged.

    Reads 8/16/24/32-bit integer PCM (scaled to [-1, 1) like soundfile: x / 2^(bits-1)) and 32/64-bit
    IEEE float, also in WAVE_FORMAT_EXTENSIBLE files. The chunks are parsed here rather than with the
    stdlib `wave` module because `wave` rejects IEEE-float files (format 3). Raises AudioError naming the
    file when it is missing, unreadable or not a supported WAV.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise AudioError(f"{path}: cannot read WAV file ({exc.strerror or exc})") from None
    fmt, payload = _wav_chunks(data, path)
    if len(fmt) < 16:
        raise AudioError(f"{path}: WAV 'fmt ' chunk is {len(fmt)} bytes, expected at least 16")
    tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", fmt)
    if tag == _EXTENSIBLE and len(fmt) >= 26:
        tag = struct.unpack_from("<H", fmt, 24)[0]  # first two bytes of the sub-format GUID
    if channels < 1 or rate < 1:
        raise AudioError(f"{path}: WAV header has {channels} channels at {rate} Hz")
    samples = _decode_samples(payload, tag, bits, path)
    frames = samples.shape[0] // channels  # a truncated last frame is dropped
    samples = samples[: frames * channels].reshape(frames, channels)  # (frames, channels)
    return samples.mean(axis=1, dtype=np.float64).astype(np.float32), rate


def _wav_chunks(data: bytes, path: str | Path) -> tuple[bytes, bytes]:
    """The 'fmt ' and 'data' chunk bodies of a RIFF/WAVE byte string."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioError(f"{path}: not a RIFF/WAVE file")
    chunks: dict[bytes, bytes] = {}
    offset = 12
    while offset + 8 <= len(data):
        chunk_id, size = struct.unpack_from("<4sI", data, offset)
        body = data[offset + 8 : offset + 8 + size]  # streamed files may declare more than is there
        chunks.setdefault(chunk_id, body)
        offset += 8 + size + (size & 1)  # chunks are padded to an even length
    for needed in (b"fmt ", b"data"):
        if needed not in chunks:
            raise AudioError(f"{path}: WAV file has no {needed.decode().strip()!r} chunk")
    return chunks[b"fmt "], chunks[b"data"]


def _decode_samples(payload: bytes, tag: int, bits: int, path: str | Path) -> np.ndarray:
    """Interleaved samples as float32 in [-1, 1] (float files keep their values)."""
    if tag == _IEEE_FLOAT and bits in (32, 64):
        dtype = np.dtype("<f4") if bits == 32 else np.dtype("<f8")
        usable = len(payload) - len(payload) % dtype.itemsize
        return np.frombuffer(payload[:usable], dtype=dtype).astype(np.float32)
    if tag != _PCM or bits not in (8, 16, 24, 32):
        raise AudioError(f"{path}: unsupported WAV encoding (format tag {tag}, {bits} bits)")
    width = bits // 8
    raw = np.frombuffer(payload[: len(payload) - len(payload) % width], dtype=np.uint8)
    if bits == 8:  # 8-bit WAV is unsigned with 128 as silence
        return (raw.astype(np.float32) - 128.0) / 128.0
    if bits == 24:  # little-endian 3-byte words, sign-extended through the top byte
        triples = raw.reshape(-1, 3).astype(np.int32)  # (samples, 3)
        values = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2].astype(np.int8).astype(np.int32) << 16)
        return values.astype(np.float32) / np.float32(1 << 23)
    values = raw.view("<i2" if bits == 16 else "<i4")
    return (values.astype(np.float64) / float(1 << (bits - 1))).astype(np.float32)
