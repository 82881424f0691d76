"""PCM bytes for network clients: 16-bit little-endian mono, and a streamable WAV header."""

import io
import wave

import numpy as np

from qwen3tts.servers.pcm import streaming_wav_header, to_s16le


def test_samples_become_clipped_16_bit_little_endian():
    data = to_s16le(np.array([0.0, 0.5, -1.0, 2.0, -3.0], dtype=np.float32))
    assert np.frombuffer(data, "<i2").tolist() == [0, 16384, -32767, 32767, -32767]


def test_a_header_followed_by_pcm_reads_back_with_the_stdlib_wave_module():
    pcm = to_s16le(np.linspace(-0.5, 0.5, 480, dtype=np.float32))
    with wave.open(io.BytesIO(streaming_wav_header(24000) + pcm)) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (24000, 2, 1)
        assert wav.readframes(10**6) == pcm
