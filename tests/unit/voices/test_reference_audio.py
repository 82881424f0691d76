"""Reference recordings are hostile until read: refused early, streamed, never hanging, never a traceback."""

import os
import threading
import tracemalloc
import wave

import numpy as np
import pytest
import soundfile

from qwen3tts.errors import AudioError
from qwen3tts.voices import VoiceError
from qwen3tts.voices.reference_audio import MAX_SECONDS, read_reference_audio
from qwen3tts.voices.registry import MAX_TRANSCRIPT_CHARS, validate_transcript

RATE = 16000


def voice_like(seconds: float = 3.0, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    tone = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 6))
    return (level * tone / np.abs(tone).max()).astype(np.float32)


def write(path, samples, subtype="PCM_16", rate=RATE):
    soundfile.write(path, samples, rate, subtype=subtype)
    return path


def test_a_good_recording_is_read_as_float_mono_at_its_rate(tmp_path):
    stereo = np.stack([voice_like(), 0.5 * voice_like()], axis=1)
    samples, rate = read_reference_audio(write(tmp_path / "ok.flac", stereo))
    assert rate == RATE and samples.dtype == np.float32 and samples.shape == (3 * RATE,)
    np.testing.assert_allclose(samples, 0.75 * voice_like(), atol=2 / 32768)


def test_the_length_is_checked_from_the_header_before_the_samples_are_read(tmp_path):
    path = tmp_path / "hour.wav"
    with wave.open(str(path), "wb") as out:  # one hour of 16 kHz PCM: 115 MB of samples
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        chunk = (voice_like(10.0) * 32767).astype("<i2").tobytes()
        for _ in range(360):
            out.writeframes(chunk)
    tracemalloc.start()
    with pytest.raises(AudioError, match=r"3600\.0 s long .* use 1 to 30 s"):
        read_reference_audio(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5 * 2**20  # no sample array was made (the file's samples are 115 MB)


def test_a_file_at_the_maximum_is_read_without_a_second_copy_of_the_file(tmp_path):
    path = write(tmp_path / "max.wav", voice_like(MAX_SECONDS), subtype="FLOAT")
    tracemalloc.start()
    samples, _ = read_reference_audio(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # The result (float32, 1.9 MB) plus one block: reading it whole as float64 frames would be 2x more.
    assert samples.nbytes == int(MAX_SECONDS * RATE) * 4 and peak < 2.2 * samples.nbytes


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "ref.wav"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def read():
        try:
            read_reference_audio(fifo)
        except AudioError as exc:
            errors.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert "is a FIFO" in str(errors[0])


@pytest.mark.parametrize(
    ("path", "kind"), [("/dev/zero", "a device"), ("/dev/null", "a device"), ("/tmp", "a directory")]
)
def test_devices_and_directories_are_refused(path, kind):
    with pytest.raises(AudioError, match=f"is {kind}"):
        read_reference_audio(path)


def test_a_five_sample_file_is_refused(tmp_path):
    with pytest.raises(AudioError, match=r"0\.0 s long \(5 frames\)"):
        read_reference_audio(write(tmp_path / "five.wav", voice_like()[:5]))


def test_a_truncated_wav_is_refused(tmp_path):
    path = write(tmp_path / "whole.wav", voice_like(5.0))
    data = path.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[: int(len(data) * 0.6)])  # 40 % missing; libsndfile alone would read 3 s
    with pytest.raises(AudioError, match="truncated"):
        read_reference_audio(cut)


def test_a_wav_streamed_with_an_unknown_length_is_read(tmp_path):
    path = write(tmp_path / "stream.wav", voice_like())
    data = bytearray(path.read_bytes())
    data[40:44] = (0xFFFFFFFF).to_bytes(4, "little")  # the data chunk's size, as a live recorder writes it
    path.write_bytes(bytes(data))
    samples, _ = read_reference_audio(path)
    assert samples.shape == (3 * RATE,)


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        (np.zeros(3 * RATE, np.float32), "silent"),
        (voice_like(level=1e-4), "silent"),
        (np.clip(voice_like(level=3.0), -1, 1), "clipped"),
        (voice_like() * np.float32(1e30), "outside"),
        (np.where(np.arange(3 * RATE) == 100, np.nan, voice_like()).astype(np.float32), "NaN or infinite"),
        (np.where(np.arange(3 * RATE) == 7, np.inf, voice_like()).astype(np.float32), "NaN or infinite"),
    ],
)
def test_silence_clipping_and_impossible_samples_are_refused(tmp_path, samples, message):
    subtype = "PCM_16" if np.isfinite(samples).all() and np.abs(samples).max() <= 1 else "FLOAT"
    with pytest.raises(AudioError, match=message):
        read_reference_audio(write(tmp_path / "bad.wav", samples, subtype=subtype))


def test_garbage_is_an_audio_error(tmp_path):
    path = tmp_path / "garbage.wav"
    path.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk" + os.urandom(200))
    with pytest.raises(AudioError, match="cannot read audio"):
        read_reference_audio(path)


def test_a_transcript_is_bounded_utf8_text():
    assert validate_transcript("  Hello there.  ") == "Hello there."
    with pytest.raises(VoiceError, match=f"100000 characters; at most {MAX_TRANSCRIPT_CHARS}"):
        validate_transcript("a" * 100_000)
    with pytest.raises(VoiceError, match="not valid UTF-8"):
        validate_transcript(b"caf\xe9 ok".decode("utf-8", "surrogateescape"))  # how argv carries bad bytes
    with pytest.raises(VoiceError, match="control character U\\+0000"):
        validate_transcript("a\x00b")
    with pytest.raises(VoiceError, match="empty"):
        validate_transcript("   ")
