"""An operator's reference recording: any format libsndfile reads (WAV, FLAC, Ogg/Vorbis, MP3...), checked.

The file is hostile until read: only a regular file is opened (a FIFO or a device would block or
never end); the length, rate and channels come from the header and are checked before a sample is
read; the samples are then streamed in blocks into one preallocated buffer (a one-hour file costs a
header read, not gigabytes). A WAV whose data chunk is shorter than its header says (a truncated
copy) is refused, as are silence, clipping, samples outside [-1, 1] and NaN or infinite samples,
each with a message that names the file and the problem. Channels are averaged to mono.

The 24 kHz resampling that the speaker encoder and the speech tokenizer expect happens in the caller
(runtime/speaker.py `resample_to_speaker_rate`, soxr as the official code).
"""

from __future__ import annotations

import math
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

from qwen3tts.errors import AudioError

MIN_SECONDS = 1.0  # shorter is no usable voice
MAX_SECONDS = 30.0  # reference codes become prompt positions: 30 s = 375 positions per request
RATE_RANGE = (8_000, 384_000)  # Hz: below is no speech, above no recorder
MAX_CHANNELS = 16
SILENCE_DBFS = -50.0  # the whole recording's RMS below this is silence, not a voice
CLIP_LEVEL = 0.999  # |sample| at or above this is at full scale
MAX_CLIPPED_FRACTION = 0.001  # more than 1 sample in 1,000 at full scale: a clipped recording
_BLOCK_FRAMES = 65_536
_UNKNOWN_SIZES = (0, 0xFFFFFFFF)  # a WAV written as a stream says 0 or "as long as it goes"


def read_reference_audio(
    path: Path, min_seconds: float = MIN_SECONDS, max_seconds: float = MAX_SECONDS
) -> tuple[np.ndarray, int]:
    """(float32 mono samples in [-1, 1], sample rate) of an audio file; AudioError names the problem."""
    path = Path(path)
    _check_regular_file(path)
    try:
        with soundfile.SoundFile(str(path)) as audio:
            frames, rate, channels = audio.frames, audio.samplerate, audio.channels
            _check_header(path, frames, rate, channels, min_seconds, max_seconds)
            _check_wav_data_size(path, audio.format)
            wave, levels = _stream_mono(audio, frames)
    except (OSError, RuntimeError, soundfile.LibsndfileError) as exc:
        raise AudioError(f"{path}: cannot read audio ({exc})") from None
    if wave.shape[0] < frames - frames // 100:  # compressed formats may estimate their length a little
        raise AudioError(f"{path}: the file ends after {wave.shape[0]} of {frames} frames (truncated)")
    levels.check(path)
    return wave, int(rate)


def _check_regular_file(path: Path) -> None:
    try:
        mode = os.stat(path).st_mode  # follows a symlink to what it names
    except OSError as exc:
        raise AudioError(f"{path}: cannot read audio ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise AudioError(f"{path}: is {_kind(mode)}; reference audio must be a regular file")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a directory" if stat.S_ISDIR(mode) else "not a regular file"


def _check_header(
    path: Path, frames: int, rate: int, channels: int, min_seconds: float, max_seconds: float
) -> None:
    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise AudioError(f"{path}: sample rate {rate} Hz is outside {RATE_RANGE[0]}-{RATE_RANGE[1]} Hz")
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioError(f"{path}: {channels} channels (at most {MAX_CHANNELS})")
    seconds = frames / rate
    if not min_seconds <= seconds <= max_seconds:
        raise AudioError(
            f"{path}: reference audio is {seconds:.1f} s long ({frames} frames); "
            f"use {min_seconds:g} to {max_seconds:g} s of speech"
        )


def _check_wav_data_size(path: Path, container: str) -> None:
    """A RIFF/WAVE file whose data chunk says more bytes than the file holds was cut short.

    libsndfile then quietly reports the frames that are there, so the header is read here.
    """
    if container != "WAV":
        return
    with open(path, "rb") as file:
        head = file.read(1 << 16)  # the fmt chunk and any metadata chunks before data
        size = os.fstat(file.fileno()).st_size
    offset = 12
    while offset + 8 <= len(head):
        chunk_id, chunk_size = struct.unpack_from("<4sI", head, offset)
        if chunk_id == b"data":
            if chunk_size not in _UNKNOWN_SIZES and offset + 8 + chunk_size > size:
                have = size - offset - 8
                raise AudioError(
                    f"{path}: the WAV header declares {chunk_size} bytes of audio, the file holds {have} "
                    f"({100 * have // chunk_size} %): the file is truncated"
                )
            return
        offset += 8 + chunk_size + (chunk_size & 1)


def _stream_mono(audio: soundfile.SoundFile, frames: int) -> tuple[np.ndarray, _Levels]:
    """The channels' mean, block by block into one buffer of the header's length (no whole-file read),
    with the levels measured per block (no temporary the size of the recording)."""
    wave = np.empty(frames, dtype=np.float32)
    levels = _Levels()
    filled = 0
    for block in audio.blocks(blocksize=_BLOCK_FRAMES, dtype="float32", always_2d=True):  # (n, channels)
        count = min(block.shape[0], frames - filled)
        mono = block[:count].mean(axis=1, dtype=np.float64)  # (count,)
        wave[filled : filled + count] = mono
        levels.add(mono)
        filled += count
        if filled >= frames:
            break
    return wave[:filled], levels


@dataclass
class _Levels:
    finite: bool = True
    peak: float = 0.0
    energy: float = 0.0  # sum of squares
    clipped: int = 0
    count: int = 0

    def add(self, mono: np.ndarray) -> None:
        if not np.isfinite(mono).all():
            self.finite = False
            return
        magnitude = np.abs(mono)
        self.peak = max(self.peak, float(magnitude.max(initial=0.0)))
        self.energy += float(np.dot(mono, mono))
        self.clipped += int(np.count_nonzero(magnitude >= CLIP_LEVEL))
        self.count += mono.size

    def check(self, path: Path) -> None:
        if not self.finite:
            raise AudioError(f"{path}: reference audio contains NaN or infinite samples")
        if self.peak > 1.0 + 1e-6:
            raise AudioError(
                f"{path}: samples reach {self.peak:.3g}, outside [-1, 1] (a float file out of range)"
            )
        rms = (self.energy / self.count) ** 0.5 if self.count else 0.0
        level = 20 * math.log10(rms) if rms > 0 else -math.inf
        if level < SILENCE_DBFS:
            raise AudioError(
                f"{path}: reference audio is silent (RMS {level:.0f} dBFS, below {SILENCE_DBFS:g})"
            )
        if self.clipped > MAX_CLIPPED_FRACTION * self.count:
            raise AudioError(
                f"{path}: reference audio is clipped ({self.clipped} samples at full scale, "
                f"{100 * self.clipped / self.count:.2f} %): record it again at a lower level"
            )
