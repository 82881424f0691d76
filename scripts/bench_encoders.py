"""Encoding cost per response format, and the candidates each format's encoder was chosen from.

Each encoder gets a 24 kHz mono recording in 80 ms chunks (1920 samples), as the engine hands them
to the HTTP server, and must stream: bytes after every chunk. Per candidate: CPU milliseconds per
second of audio (median of --rounds), the bit rate, how many 80 ms chunks go in before the first byte
of audio comes out, and whether a decoder reads back the whole duration at 24 kHz.

    PYTHONPATH=daemon .venv/bin/python scripts/bench_encoders.py speech.wav [--rounds 5]

The candidates are the two libraries the server may use: libsndfile (soundfile) and FFmpeg (PyAV).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np
import soundfile as sf

from qwen3tts.servers.encoding import FORMATS, PcmEncoder, PyAvEncoder, SoundFileEncoder

RATE = 24000
CHUNK = 1920

CANDIDATES = {
    "mp3": {
        "soundfile (LAME, CBR)": lambda: FORMATS["mp3"].encoder(RATE),
        "soundfile (LAME, VBR)": lambda: SoundFileEncoder(RATE, "MP3", "MPEG_LAYER_III"),
        "pyav (libmp3lame, CBR)": lambda: PyAvEncoder(RATE, "mp3", "libmp3lame", 64000, write_xing="0"),
    },
    "opus": {
        "soundfile (libopus)": lambda: SoundFileEncoder(RATE, "OGG", "OPUS"),
        "pyav (libopus)": lambda: FORMATS["opus"].encoder(RATE),
    },
    "aac": {"pyav (FFmpeg aac)": lambda: PyAvEncoder(RATE, "adts", "aac", 64000)},
    "flac": {
        "soundfile (libFLAC)": lambda: SoundFileEncoder(RATE, "FLAC", "PCM_16"),
        "pyav (FFmpeg flac)": lambda: PyAvEncoder(RATE, "flac", "flac"),
    },
    "wav": {"ours": lambda: FORMATS["wav"].encoder(RATE)},
    "pcm": {"ours": lambda: PcmEncoder()},
}  # fmt: skip


def run(make, x: np.ndarray) -> tuple[bytes, float, int]:
    """(encoded bytes, CPU seconds, chunks fed before the first byte of audio)."""
    encoder = make()
    parts, first = [], None
    start = time.process_time()
    for i in range(0, len(x), CHUNK):
        data = encoder.encode(x[i : i + CHUNK])
        parts.append(data)
        if first is None and data:
            first = i // CHUNK + 1
    parts.append(encoder.finish())
    return b"".join(parts), time.process_time() - start, first or 0


def decoded(fmt: str, data: bytes) -> tuple[int, int]:
    """(samples, rate) a decoder reads back: PyAV for every compressed format, our own for raw PCM."""
    if fmt == "pcm":
        return len(data) // 2, RATE
    import av

    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        frames = sum(frame.samples for frame in container.decode(stream))
        return frames, stream.codec_context.sample_rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", help="a 24 kHz mono recording (WAV, FLAC, ...)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    x, rate = sf.read(args.recording, dtype="float32")
    if rate != RATE or x.ndim != 1:
        parser.error(f"{args.recording}: need 24 kHz mono, got {rate} Hz with shape {x.shape}")
    seconds = len(x) / RATE
    print(f"{seconds:.2f} s of audio in {CHUNK}-sample chunks, median of {args.rounds} rounds")
    print("| format | encoder | CPU ms per s of audio | kbit/s | chunks before the first byte | decoded |")
    print("|---|---|---|---|---|---|")
    for fmt, candidates in CANDIDATES.items():
        for name, make in candidates.items():
            costs = []
            for _ in range(args.rounds):
                data, cost, first = run(make, x)
                costs.append(cost)
            frames, out_rate = decoded(fmt, data)
            ms = 1000 * statistics.median(costs) / seconds
            kbps = len(data) * 8 / seconds / 1000
            read = f"{frames / out_rate:.2f} s at {out_rate} Hz"
            print(f"| {fmt} | {name} | {ms:.1f} | {kbps:.1f} | {first} | {read} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
