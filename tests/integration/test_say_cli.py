"""`qwen3tts say` synthesises a WAV end to end from a tiny bundle of each variant."""

import re
import subprocess
import sys
import wave

import numpy as np
import pytest

FRAMES = 12  # --max-frames: frames of 1920 samples


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


def reported_frames(stdout: str) -> int:
    """The frame count `say` prints ("... (N frames) in ...")."""
    return int(re.search(r"\((\d+) frames\)", stdout).group(1))


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
    frames = reported_frames(result.stdout)
    assert 0 < frames <= FRAMES and samples.size == frames * 1920  # a random model may sample EOS early
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


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--voice", "nobody"], "unknown voice 'nobody'"),
        (["--language", "klingon"], "unknown language 'klingon'"),
        (["--instruct", "whisper"], "instruct is not supported by a 0b6 custom_voice model"),
    ],
)
def test_a_bad_voice_or_language_is_a_clear_error_before_anything_compiles(
    tiny_models, tmp_path, extra, message
):
    result = say(tiny_models.bundle("custom_voice", "tiny", "int8"), tmp_path / "x.wav", *extra)
    assert result.returncode == 1
    assert (
        result.stderr.strip().splitlines()[-1].startswith(f"qwen3tts say: RequestError: {message}")
    )  # no id
    assert "runs on" not in result.stderr  # no graph was compiled
    assert not (tmp_path / "x.wav").exists()


def test_a_text_cut_by_the_frame_cap_says_so_and_surrounding_whitespace_is_ignored(tiny_models, tmp_path):
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    long_text = "This sentence is much longer than three frames can ever hold. " * 3
    command = [
        sys.executable,
        "-m",
        "qwen3tts",
        "say",
        "--bundle",
        str(bundle),
        "--greedy",
        "--max-frames",
        "3",
    ]
    padded = subprocess.run(
        [*command, f"  \n {long_text} \t ", "--out", str(tmp_path / "padded.wav")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    plain = subprocess.run(
        [*command, long_text.strip(), "--out", str(tmp_path / "plain.wav")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert padded.returncode == 0 and plain.returncode == 0, padded.stderr[-2000:]
    assert "the text was cut: it reached the cap of 3 frames" in padded.stdout
    assert read(tmp_path / "padded.wav").size == 3 * 1920
    np.testing.assert_allclose(read(tmp_path / "padded.wav"), read(tmp_path / "plain.wav"), atol=2)


def test_a_whitespace_only_text_is_refused_before_compiling(tiny_models, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "qwen3tts",
            "say",
            "  \n ",
            "--bundle",
            str(tiny_models.bundle("custom_voice", "tiny", "int8")),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == "qwen3tts say: RequestError: text is empty"
    assert "runs on" not in result.stderr


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
    # every frame `say` made reached the sink (a random model may sample EOS early: 4 of 12 frames seen)
    frames = reported_frames(result.stdout)
    assert 0 < frames <= FRAMES and read(played).size == frames * 1920
