"""Engine PCM -> the audio formats of OpenAI's speech API, encoded chunk by chunk as it streams.

| format | container, codec | encoder |
|---|---|---|
| mp3  | MPEG-2 Layer III, 64 kbit/s CBR | libsndfile (LAME), through soundfile |
| opus | Ogg Opus, 32 kbit/s, a page every 80 ms | libopus, through PyAV (FFmpeg; imported on first use) |
| aac  | ADTS AAC-LC, 64 kbit/s | FFmpeg's native AAC encoder, through PyAV |
| flac | FLAC, 16 bit | libsndfile (libFLAC), through soundfile |
| wav  | RIFF/WAVE 16 bit, sizes "unknown" | ours (pcm.py) |
| pcm  | raw 24 kHz s16le mono, like OpenAI's | ours (pcm.py) |

Every format streams: `encode()` returns the bytes a chunk completes, `finish()` the rest. libsndfile
goes back at the end to fill in what it could not know at the start (FLAC's sample count and MD5, the
MP3 Info frame); a stream cannot, so those writes are dropped and the headers say "length unknown",
which every decoder accepts (constant bit rate keeps MP3 duration estimates right). Why these encoders:
scripts/bench_encoders.py measured both libraries for every format (docs/benchmarks.md); libsndfile's
Opus took 3.3 times the CPU of FFmpeg's for the same bit rate, so Opus goes through PyAV, which AAC
needs anyway.

An encoder that fails raises EncoderError; the response then ends early and its synthesis is cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qwen3tts.servers.pcm import streaming_wav_header, to_s16le

MP3_LEVEL = 0.6
"""libsndfile's MP3 compression level (0 = 160 kbit/s ... 1 = 8 kbit/s at 24 kHz): 0.6 gives 64 kbit/s."""
OPUS_PAGE_US = "80000"
"""Ogg page duration: a page (and so audio) goes out every 80 ms, not once a second (FFmpeg's default)."""
OPUS_BIT_RATE = 32000
AAC_BIT_RATE = 64000


class EncoderError(RuntimeError):
    """An encoder failed; the message says which format and why."""


class Encoder:
    """Float PCM chunks in, bytes of the format out."""

    def encode(self, samples: np.ndarray) -> bytes:
        raise NotImplementedError

    def finish(self) -> bytes:
        """The bytes that end the stream; the encoder is closed afterwards."""
        return b""

    def close(self) -> None:
        """Free the encoder without finishing the stream (the response ended early). Idempotent."""


class PcmEncoder(Encoder):
    def __init__(self, header: bytes = b""):
        self._header = header

    def encode(self, samples: np.ndarray) -> bytes:
        data, self._header = self._header + to_s16le(samples), b""
        return data

    def finish(self) -> bytes:
        data, self._header = self._header, b""
        return data


class _ForwardFile:
    """A write-only file for libsndfile that hands out what was written and never goes back.

    libsndfile seeks back to patch headers; a patch of bytes not yet taken lands, a patch of bytes
    already sent is dropped (the stream keeps the provisional header)."""

    def __init__(self):
        self._sent = 0  # bytes handed out by take()
        self._pending = bytearray()
        self._pos = 0

    def write(self, data) -> int:
        data = bytes(data)
        size = len(data)
        start = self._pos - self._sent
        self._pos += size
        if start < 0:
            data, start = data[-start:], 0
        if data:
            end = start + len(data)
            if end > len(self._pending):
                self._pending.extend(bytes(end - len(self._pending)))
            self._pending[start:end] = data
        # All of it counts as written, the dropped part too: a writer told "fewer bytes" retries them
        # or fails (PyAV 18.1.1 raises "write() accepted no bytes" on FFmpeg FLAC's header patch).
        return size

    def seek(self, offset: int, whence: int = 0) -> int:
        size = self._sent + len(self._pending)
        self._pos = offset if whence == 0 else self._pos + offset if whence == 1 else size + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        return b""

    def take(self) -> bytes:
        data = bytes(self._pending)
        self._sent += len(data)
        self._pending.clear()
        return data


class SoundFileEncoder(Encoder):
    """A libsndfile format, written through soundfile into a `_ForwardFile`."""

    def __init__(self, rate: int, fmt: str, subtype: str, **options):
        import soundfile

        self._errors = (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError)
        self._out = _ForwardFile()
        self.name = fmt
        try:
            self._file = soundfile.SoundFile(self._out, "w", rate, 1, subtype, format=fmt, **options)
        except self._errors as exc:
            raise EncoderError(f"{fmt}: cannot start the encoder: {exc}") from exc

    def encode(self, samples: np.ndarray) -> bytes:
        try:
            self._file.write(np.clip(samples, -1.0, 1.0).astype(np.float32, copy=False))
        except self._errors as exc:
            raise EncoderError(f"{self.name}: encoding failed: {exc}") from exc
        return self._out.take()

    def finish(self) -> bytes:
        try:
            self._file.close()
        except self._errors as exc:
            raise EncoderError(f"{self.name}: finishing failed: {exc}") from exc
        return self._out.take()

    def close(self) -> None:
        self._file.close()


class PyAvEncoder(Encoder):
    """A codec in a streamable container (ADTS, Ogg, MP3, FLAC), by FFmpeg through PyAV."""

    def __init__(self, rate: int, container: str, codec: str, bit_rate: int | None = None, **options: str):
        import av

        self._av, self._out, self._rate, self._pts = av, _ForwardFile(), rate, 0
        self._errors = (av.FFmpegError, RuntimeError, ValueError, OSError)
        self.name = codec
        try:
            self._container = av.open(self._out, mode="w", format=container, options=options)
            self._stream = self._container.add_stream(codec, rate=rate)
            self._stream.layout = "mono"
            if bit_rate:
                self._stream.bit_rate = bit_rate
        except self._errors as exc:
            raise EncoderError(f"{codec}: cannot start the encoder: {exc}") from exc

    def encode(self, samples: np.ndarray) -> bytes:
        block = np.clip(samples, -1.0, 1.0).astype(np.float32)[None, :]
        frame = self._av.AudioFrame.from_ndarray(block, format="flt", layout="mono")
        frame.sample_rate, frame.pts = self._rate, self._pts
        self._pts += block.shape[1]
        return self._mux(frame)

    def _mux(self, frame) -> bytes:
        try:
            for packet in self._stream.encode(frame):
                self._container.mux(packet)
        except self._errors as exc:
            raise EncoderError(f"{self.name}: encoding failed: {exc}") from exc
        return self._out.take()

    def finish(self) -> bytes:
        data = self._mux(None)
        try:
            self._container.close()
        except self._errors as exc:
            raise EncoderError(f"{self.name}: finishing failed: {exc}") from exc
        return data + self._out.take()

    def close(self) -> None:
        self._container.close()


@dataclass(frozen=True)
class AudioFormat:
    name: str
    media_type: str
    first_chunk_frames: int | None = None
    """Engine frames to ask for before the first PCM chunk; None: the engine's default (one frame, 80 ms).
    FFmpeg's AAC encoder gives its first packet only after 2048 samples: a 1-frame chunk (1920) would wait
    in it for the next chunk, 12 frames later, so AAC asks for 2."""

    def encoder(self, rate: int) -> Encoder:
        """A new encoder for one response; EncoderError if it cannot start."""
        return _MAKERS[self.name](rate)


_MAKERS = {
    "mp3": lambda rate: SoundFileEncoder(
        rate, "MP3", "MPEG_LAYER_III", compression_level=MP3_LEVEL, bitrate_mode="CONSTANT"
    ),
    "opus": lambda rate: PyAvEncoder(rate, "ogg", "libopus", OPUS_BIT_RATE, page_duration=OPUS_PAGE_US),
    "aac": lambda rate: PyAvEncoder(rate, "adts", "aac", AAC_BIT_RATE),
    "flac": lambda rate: SoundFileEncoder(rate, "FLAC", "PCM_16"),
    "wav": lambda rate: PcmEncoder(streaming_wav_header(rate)),
    "pcm": lambda rate: PcmEncoder(),
}

FORMATS = {
    fmt.name: fmt
    for fmt in (
        AudioFormat("mp3", "audio/mpeg"),
        AudioFormat("opus", "audio/ogg"),
        AudioFormat("aac", "audio/aac", first_chunk_frames=2),
        AudioFormat("flac", "audio/flac"),
        AudioFormat("wav", "audio/wav"),
        AudioFormat("pcm", "audio/pcm"),
    )
}
"""OpenAI's response formats, in its order; mp3 is its default and ours."""
DEFAULT_FORMAT = "mp3"
