"""`qwen3tts say` synthesises a WAV end to end from a tiny bundle of each variant."""

import subprocess
import sys
import wave

import numpy as np
import pytest

FRAMES = 12  # max_frames: N sampled tokens give N-1 frames of 1920 samples


def say(bundle, out, *extra):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "qwen3tts",
            "say",
            "Hello there, this is a test.",
            "--bundle",
            str(bundle),
            "--out",
            str(out),
            "--max-frames",
            str(FRAMES),
            "--seed",
            "3",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


def read(path):
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
        return np.frombuffer(w.readframes(w.getnframes()), "<i2")


@pytest.mark.parametrize(
    ("variant", "shape", "extra"),
    [
        ("custom_voice", "tiny", ["--voice", "eric", "--language", "chinese"]),
        ("voice_design", "tiny-1.7b", ["--instruct", "A calm, low voice."]),
        ("base", "tiny", []),
    ],
)
def test_say_writes_a_wav_and_reports_latency_and_real_time_factor(
    tiny_models, tmp_path, variant, shape, extra
):
    bundle = tiny_models.bundle(variant, shape, "int8")
    result = say(bundle, tmp_path / "out.wav", *extra)
    assert result.returncode == 0, result.stderr[-2000:]
    samples = read(tmp_path / "out.wav")
    assert samples.size == (FRAMES - 1) * 1920
    assert np.abs(samples).max() > 100  # not silence
    assert "first audio after" in result.stdout and "real-time factor" in result.stdout


def test_a_base_bundle_speaks_with_the_voice_of_a_reference_wav(tiny_models, tmp_path):
    bundle = tiny_models.bundle("base", "tiny", "int8")
    reference = tmp_path / "ref.wav"
    tone = (0.3 * np.sin(np.linspace(0, 2000, 48000)) * 32767).astype("<i2")
    with wave.open(str(reference), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(24000)
        w.writeframes(tone.tobytes())
    plain = say(bundle, tmp_path / "plain.wav")
    cloned = say(bundle, tmp_path / "cloned.wav", "--ref-audio", str(reference))
    assert plain.returncode == 0 and cloned.returncode == 0, cloned.stderr[-2000:]
    assert not np.array_equal(read(tmp_path / "plain.wav"), read(tmp_path / "cloned.wav"))


def test_an_unknown_voice_is_a_clear_error_and_a_nonzero_exit(tiny_models, tmp_path):
    result = say(tiny_models.bundle("custom_voice", "tiny", "int8"), tmp_path / "x.wav", "--voice", "nobody")
    assert result.returncode == 1
    assert "RequestError: unknown voice 'nobody'" in result.stderr


def test_without_out_say_plays_through_the_configured_sink(tiny_models, tmp_path):
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "qwen3tts",
            "--set",
            "audio.sink=wav",
            "--set",
            f"audio.wav_dir={tmp_path}",
            "say",
            "Hello there.",
            "--bundle",
            str(bundle),
            "--max-frames",
            str(FRAMES),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "played on wav" in result.stdout
    [played] = list(tmp_path.glob("*.wav"))
    assert read(played).size == (FRAMES - 1) * 1920
