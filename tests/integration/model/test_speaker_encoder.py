"""The Base speaker encoder path (WAV -> 24 kHz -> log-mel -> ECAPA x-vector) against the official one.

Expectations come from scripts/reference/speaker_expectations.py (official qwen_tts on the tiny Base
checkpoint of `write_checkpoint(variant="base", shape="tiny", seed=0)`); f32 inference everywhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
import wave
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

from qwen3tts.errors import CheckpointError, RequestError
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.graphs.speaker_encoder import MELS, XVECTOR, build_speaker_encoder
from qwen3tts.model.tiny import write_checkpoint
from qwen3tts.runtime.speaker import (
    SpeakerEncoder,
    mel_filterbank,
    mel_spectrogram,
    resample_to_speaker_rate,
)

EXPECTATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "speaker_expectations.npz"
REGENERATE = "regenerate with: scripts/reference/.venv/bin/python scripts/reference/speaker_expectations.py"
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
TOL = 1e-4  # max |ours - official| relative to max |official|
RATES = {"24k": 24000, "16k": 16000}


@pytest.fixture(scope="module")
def expected():
    with np.load(EXPECTATIONS) as data:
        return {name: data[name] for name in data.files}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, expected):
    path = write_checkpoint(tmp_path_factory.mktemp("base"), variant="base", shape="tiny", seed=0)
    sha256 = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()
    if sha256 != str(expected["model_sha256"]):
        pytest.fail(f"tiny Base checkpoint changed (model.safetensors sha256 {sha256}); {REGENERATE}")
    return load_checkpoint(path)


@pytest.fixture(scope="module")
def graph(checkpoint):
    return build_speaker_encoder(checkpoint.spec.speaker_encoder, checkpoint.weights)


@pytest.fixture(scope="module")
def encoder(graph):
    return SpeakerEncoder(ov.Core().compile_model(graph, "CPU", F32))


def relative_error(ours: np.ndarray, official: np.ndarray) -> float:
    assert ours.shape == official.shape, (ours.shape, official.shape)
    return float(np.max(np.abs(ours - official)) / np.max(np.abs(official)))


# ---------------------------------------------------------------- features vs official


@pytest.mark.reference
def test_mel_filterbank_equals_librosa_slaney_filterbank(expected):
    np.testing.assert_allclose(mel_filterbank(), expected["mel_filterbank"], rtol=0, atol=1e-7)


@pytest.mark.reference
def test_resampling_16k_to_24k_equals_librosa_soxr_hq(expected):
    ours = resample_to_speaker_rate(expected["wave_16k"], 16000)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, expected["resampled_16k"], rtol=0, atol=1e-6)


@pytest.mark.reference
@pytest.mark.parametrize("tag", sorted(RATES))
def test_mel_spectrogram_matches_official_extraction(expected, tag):
    ours = mel_spectrogram(expected[f"wave_{tag}"], RATES[tag])
    error = relative_error(ours, expected[f"mel_{tag}"])
    print(f"mel {tag}: max relative error {error:.2e}")
    assert ours.dtype == np.float32
    assert error < TOL


# ---------------------------------------------------------------- x-vector vs official


@pytest.mark.reference
@pytest.mark.parametrize("tag", sorted(RATES))
def test_xvector_matches_official_speaker_encoder(encoder, expected, tag):
    ours = encoder.xvector(expected[f"wave_{tag}"], RATES[tag])
    error = relative_error(ours, expected[f"xvector_{tag}"])
    print(f"x-vector {tag}: max relative error {error:.2e}")
    assert error < TOL


@pytest.mark.reference
def test_official_xvectors_differ_between_voices_so_the_comparison_is_not_vacuous(expected):
    assert relative_error(expected["xvector_16k"], expected["xvector_24k"]) > 0.1


def test_graph_takes_mels_of_any_length_and_returns_one_xvector(graph, checkpoint):
    spec = checkpoint.spec.speaker_encoder
    assert graph.input(MELS).get_partial_shape().to_string() == f"[1,?,{spec.mel_dim}]"
    assert graph.output(XVECTOR).get_partial_shape().to_string() == f"[1,{spec.enc_dim}]"


def test_xvector_from_wav_file_equals_xvector_of_its_samples(encoder, expected, tmp_path):
    samples = np.round(expected["wave_16k"] * 32767).astype(np.int16)
    path = write_pcm16(tmp_path / "voice.wav", samples[:, None], 16000)
    from_file = encoder.xvector_from_file(path)
    np.testing.assert_array_equal(from_file, encoder.xvector(samples / np.float32(32768), 16000))


def test_build_rejects_aggregation_width_that_does_not_sum_the_block_widths(checkpoint):
    bad = dataclasses.replace(checkpoint.spec.speaker_encoder, enc_channels=(32, 32, 32, 32, 64))
    with pytest.raises(CheckpointError, match="enc_channels"):
        build_speaker_encoder(bad, checkpoint.weights)


# ---------------------------------------------------------------- request validation


def test_reference_audio_shorter_than_a_tenth_of_a_second_is_rejected():
    with pytest.raises(RequestError, match=r"at least 0\.1 s"):
        mel_spectrogram(np.zeros(2000, np.float32), 24000)


def test_reference_audio_with_nan_is_rejected():
    wave_ = np.zeros(24000, np.float32)
    wave_[100] = np.nan
    with pytest.raises(RequestError, match="NaN"):
        mel_spectrogram(wave_, 24000)


def test_reference_audio_must_be_mono():
    with pytest.raises(RequestError, match="mono"):
        mel_spectrogram(np.zeros((24000, 2), np.float32), 24000)


# ---------------------------------------------------------------- a WAV file


def write_pcm16(path: Path, samples: np.ndarray, rate: int) -> Path:
    """samples (frames, channels) int16, written with the stdlib wave module."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(samples.shape[1])
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.astype("<i2").tobytes())
    return path
