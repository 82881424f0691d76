"""Base voice cloning from the outside: `say --ref-audio --ref-text`, and precomputed voice inputs.

Parity with the official implementation is in test_parity_icl.py; here the user-facing paths: a FLAC
at 44.1 kHz with its transcript clones by ICL, voice inputs survive a save/load round trip and give
the same prompt, and bad inputs are clear errors.
"""

from __future__ import annotations

import subprocess
import sys
import wave

import numpy as np
import pytest
import soundfile
from bundles import PARITY_OVERRIDES

from qwen3tts.engine.sequence import Request
from qwen3tts.errors import RequestError
from qwen3tts.runtime.cloning import VoiceInputs, read_audio
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

FRAMES = 8
REF_TEXT = "Good morning, this is the reference voice speaking."


def reference(rate: int, seconds: float = 1.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    rng = np.random.default_rng(5)
    return (0.2 * np.sin(2 * np.pi * 220 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 2 * t))
            + 0.01 * rng.standard_normal(t.shape)).astype(np.float32)  # fmt: skip


@pytest.fixture(scope="module")
def base_runtime(tiny_models):
    bundle = tiny_models.bundle("base", "tiny", "f32")
    return load_runtime(bundle, load_settings(None, list(PARITY_OVERRIDES)))


def say(bundle, out, *extra):
    command = [sys.executable, "-m", "qwen3tts", "say", "Hello there.", "--bundle", str(bundle),
               "--out", str(out), "--max-frames", str(FRAMES), "--seed", "3", *extra]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def read_wav(path):
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2")


def test_say_clones_by_icl_from_a_flac_with_its_transcript(tiny_models, tmp_path):
    bundle = tiny_models.bundle("base", "tiny", "int8")
    flac = tmp_path / "ref.flac"
    soundfile.write(flac, np.stack([reference(44100)] * 2, 1), 44100)  # stereo, 44.1 kHz
    xvector_only = say(bundle, tmp_path / "x.wav", "--ref-audio", str(flac))
    icl = say(bundle, tmp_path / "icl.wav", "--ref-audio", str(flac), "--ref-text", REF_TEXT)
    assert xvector_only.returncode == 0, xvector_only.stderr[-2000:]
    assert icl.returncode == 0, icl.stderr[-2000:]
    samples = read_wav(tmp_path / "icl.wav")
    assert samples.size == FRAMES * 1920  # `--max-frames N` gives N frames and np.abs(samples).max() > 100
    assert not np.array_equal(samples, read_wav(tmp_path / "x.wav"))  # the transcript and codes matter


def test_ref_text_without_ref_audio_is_a_clear_error(tiny_models, tmp_path):
    result = say(tiny_models.bundle("base", "tiny", "int8"), tmp_path / "x.wav", "--ref-text", REF_TEXT)
    assert result.returncode == 1
    assert "--ref-audio" in result.stderr


def test_ref_text_needs_a_base_bundle(tiny_models, tmp_path):
    flac = tmp_path / "ref.flac"
    soundfile.write(flac, reference(24000), 24000)
    result = say(
        tiny_models.bundle("custom_voice", "tiny", "int8"), tmp_path / "x.wav",
        "--voice", "vivian", "--ref-audio", str(flac), "--ref-text", REF_TEXT,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Base" in result.stderr


def test_saved_voice_inputs_load_back_and_build_the_same_prompt(base_runtime, tmp_path):
    voice = base_runtime.voice_encoder.encode(reference(16000), 16000, REF_TEXT)
    assert voice.icl and voice.ref_codes.shape == (19, 16)  # ceil(1.5 s * 12.5) frames
    voice.save(tmp_path / "voice.npz")
    loaded = VoiceInputs.load(tmp_path / "voice.npz")
    builder = base_runtime.prompt_builder
    builder.register_voice("fresh", voice)
    builder.register_voice("loaded", loaded)
    fresh = builder(Request(id="a", text="Hello.", language="english", ref_audio="fresh"))
    again = builder(Request(id="b", text="Hello.", language="english", ref_audio="loaded"))
    np.testing.assert_array_equal(fresh.embeddings, again.embeddings)
    # the ICL body puts one position per reference frame (plus codec_bos) into the prompt
    plain = builder(Request(id="c", text="Hello.", language="english", ref_audio=None))
    assert fresh.embeddings.shape[0] > plain.embeddings.shape[0] + voice.ref_codes.shape[0]


def test_an_x_vector_only_voice_has_no_codes_and_round_trips(base_runtime, tmp_path):
    voice = base_runtime.voice_encoder.encode(reference(24000), 24000)
    assert not voice.icl and voice.ref_codes is None
    voice.save(tmp_path / "x.npz")
    np.testing.assert_array_equal(VoiceInputs.load(tmp_path / "x.npz").xvector, voice.xvector)


def test_bad_voice_inputs_are_request_errors(base_runtime, tmp_path):
    encoder, builder = base_runtime.voice_encoder, base_runtime.prompt_builder
    with pytest.raises(RequestError, match="transcript is empty"):
        encoder.encode(reference(24000), 24000, "   ")
    with pytest.raises(RequestError, match="sample rate"):
        encoder.encode(reference(24000), 0, REF_TEXT)
    with pytest.raises(RequestError, match="NaN"):
        encoder.encode(np.full(24000, np.nan, np.float32), 24000, REF_TEXT)
    good = encoder.encode(reference(24000), 24000, REF_TEXT)
    with pytest.raises(RequestError, match="reference codes"):
        builder.register_voice("bad", VoiceInputs(good.xvector, good.ref_codes + 5000, good.ref_text_ids))
    with pytest.raises(RequestError, match="x-vector has 7 values"):
        builder.register_voice("bad", VoiceInputs(np.zeros(7, np.float32)))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(RequestError, match="not a saved voice"):
        VoiceInputs.load(tmp_path / "junk.npz")
    (tmp_path / "empty.wav").write_bytes(b"RIFF")
    with pytest.raises(RequestError, match=r"reference audio: .*cannot read audio"):
        read_audio(tmp_path / "empty.wav")
