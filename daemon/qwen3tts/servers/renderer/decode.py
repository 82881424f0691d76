"""Fetched bytes -> float32 mono PCM at the engine's rate, for the audio containers we decode only.

FFmpeg (PyAV) probes the bytes; only the containers named in CONTAINERS are taken (an image, a video
or a playlist is refused even when FFmpeg could open it), the first audio stream is decoded, resampled
to MEDIA_RATE mono by FFmpeg's resampler, and decoding stops with a MediaError as soon as the audio
passes `max_seconds` (a small file that expands to hours never fills memory). Runs in a worker thread.
"""

from __future__ import annotations

import io

import av
import numpy as np

from qwen3tts.servers.renderer.fetch import ILLEGAL_MIME_TYPE, MediaError
from qwen3tts.servers.renderer.outlet import MEDIA_RATE

CONTAINERS = frozenset({"wav", "mp3", "flac", "ogg", "aac", "mov,mp4,m4a,3gp,3g2,mj2"})
"""FFmpeg's names of the containers taken: WAV, MP3, FLAC, Ogg (Vorbis, Opus), AAC (ADTS), M4A."""
SINK_TYPES = (
    "audio/wav",
    "audio/x-wav",
    "audio/wave",
    "audio/L16",
    "audio/mpeg",
    "audio/flac",
    "audio/x-flac",
    "audio/ogg",
    "audio/opus",
    "audio/aac",
    "audio/mp4",
    "audio/x-m4a",
)
"""What ConnectionManager's GetProtocolInfo offers, the same formats by MIME type."""


def decode_media(data: bytes, max_seconds: float) -> np.ndarray:
    """float32 mono samples at MEDIA_RATE; MediaError (ILLEGAL_MIME_TYPE) for anything else."""
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if container.format.name not in CONTAINERS:
                raise MediaError(f"not an audio format we play ({container.format.name})", ILLEGAL_MIME_TYPE)
            if not container.streams.audio:
                raise MediaError("the media holds no audio stream", ILLEGAL_MIME_TYPE)
            pcm = _decode(container, container.streams.audio[0], int(max_seconds * MEDIA_RATE))
    except (av.FFmpegError, ValueError, EOFError, OSError) as exc:  # av's errors are ValueErrors/OSErrors
        raise MediaError(f"cannot decode the media: {type(exc).__name__}", ILLEGAL_MIME_TYPE) from None
    if pcm.size == 0:
        raise MediaError("the media decodes to no audio", ILLEGAL_MIME_TYPE)
    if not np.isfinite(pcm).all():
        raise MediaError("the media decodes to invalid samples", ILLEGAL_MIME_TYPE)
    return np.clip(pcm, -1.0, 1.0)


def _decode(container, stream, max_samples: int) -> np.ndarray:
    resampler = av.AudioResampler(format="fltp", rate=MEDIA_RATE)  # planar, the stream's own channels
    parts: list[np.ndarray] = []
    total = 0
    for frame in container.decode(stream):
        for out in resampler.resample(frame):
            total += _take(out, parts, total, max_samples)
    for out in resampler.resample(None):  # what the resampler still holds
        total += _take(out, parts, total, max_samples)
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def _take(frame, parts: list[np.ndarray], total: int, max_samples: int) -> int:
    samples = frame.to_ndarray().mean(axis=0, dtype=np.float32)  # channels averaged, as voices/ does
    if total + len(samples) > max_samples:
        raise MediaError(f"the media is longer than {max_samples / MEDIA_RATE:g} s", ILLEGAL_MIME_TYPE)
    parts.append(samples)
    return len(samples)
