"""Each response format's encoder streams (bytes within the first chunks), decodes back to the whole
input at 24 kHz, and a failing encoder raises EncoderError; the forward-only file drops what it cannot
patch any more."""

from __future__ import annotations

import numpy as np
import pytest
from audio_decode import decode

from qwen3tts.servers.encoding import FORMATS, EncoderError, PyAvEncoder, SoundFileEncoder, _ForwardFile

RATE, CHUNK = 24000, 1920


def tone(seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def encode(fmt: str, x: np.ndarray) -> tuple[bytes, int]:
    """(all bytes, chunks fed before the first byte)."""
    encoder = FORMATS[fmt].encoder(RATE)
    parts = [encoder.encode(x[i : i + CHUNK]) for i in range(0, len(x), CHUNK)]
    first = next((i + 1 for i, part in enumerate(parts) if part), len(parts))
    return b"".join(parts) + encoder.finish(), first


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_streams_and_decodes_to_the_whole_input(fmt):
    x = tone()
    data, first = encode(fmt, x)
    y, rate = decode(fmt, data)
    assert rate == RATE
    # bytes go out once the frames the format asks the engine for first are in (AAC: 2, the rest: 1)
    assert first <= (FORMATS[fmt].first_chunk_frames or 1)
    assert len(x) <= len(y) <= len(x) + 0.15 * RATE  # encoder delay and padding at most
    assert np.sqrt(np.mean(y**2)) == pytest.approx(np.sqrt(np.mean(x**2)), rel=0.25)


def test_lossless_formats_give_back_the_16_bit_samples():
    x = tone(0.5)
    for fmt in ("flac", "wav", "pcm"):
        y, _ = decode(fmt, encode(fmt, x)[0])
        assert np.max(np.abs(y[: len(x)] - x)) < 2 / 32768, fmt


def test_the_forward_file_patches_what_it_still_holds_and_drops_what_went_out():
    out = _ForwardFile()
    out.write(b"HEADER__")
    out.seek(0)
    out.write(b"head")  # not taken yet: patched
    out.seek(0, 2)  # as libsndfile does after a patch
    assert out.take() == b"headER__"
    out.write(b"data")
    out.seek(0)
    assert out.write(b"HEAD") == 4  # already sent: dropped, yet accepted (a writer would retry or fail)
    out.seek(6)
    assert out.write(b"xxDA") == 4  # half sent, half held: the held half is patched
    out.seek(0, 2)
    out.write(b"tail")
    assert out.take() == b"DAtatail" and out.tell() == 16


def test_an_encoder_that_patches_a_header_already_sent_still_finishes():
    # FFmpeg's FLAC muxer rewrites STREAMINFO at byte 8 when it closes; those bytes went out with the
    # first chunk. PyAV 18.1.1 fails the close if the file says it took none of them.
    encoder = PyAvEncoder(RATE, "flac", "flac")
    x = tone()
    data = b"".join(encoder.encode(x[i : i + CHUNK]) for i in range(0, len(x), CHUNK)) + encoder.finish()
    y, rate = decode("flac", data)
    assert rate == RATE and len(y) == len(x)


def test_an_encoder_that_cannot_start_or_write_raises_encoder_error():
    with pytest.raises(EncoderError, match="cannot start"):
        SoundFileEncoder(RATE, "MP3", "PCM_16")  # no such combination
    encoder = FORMATS["flac"].encoder(RATE)
    encoder.close()
    with pytest.raises(EncoderError, match="FLAC: encoding failed"):
        encoder.encode(tone(0.1))
