"""The codec's stored precision: what `qwen3tts build` stores decodes within the gate of the f32 weights."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest

from qwen3tts.model import bundle as layout
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.codec_gate import EXACT, MIN_SNR_DB, random_codes, snr_db, stream_decode
from qwen3tts.model.graphs.codec import build_codec_frames, build_codec_samples


@pytest.fixture(scope="module")
def int8_bundle(tiny_models):
    return tiny_models.bundle(weights="int8")


def _decode(core, frames_model, samples_model, spec, codes):
    frame_part = core.compile_model(frames_model, "CPU", EXACT)
    sample_part = core.compile_model(samples_model, "CPU", EXACT)
    return stream_decode(frame_part, sample_part, spec, codes)


def test_the_stored_codec_keeps_the_gate_against_the_f32_weights(tiny_models, int8_bundle):
    checkpoint = load_checkpoint(tiny_models.checkpoint())
    spec, core = checkpoint.spec.codec, ov.Core()
    codes = random_codes(spec, 48, seed=11)  # other codes than the build measured on
    f32 = _decode(
        core,
        build_codec_frames(spec, checkpoint.codec_weights),
        build_codec_samples(spec, checkpoint.codec_weights, 12),
        spec,
        codes,
    )
    stored = _decode(
        core, int8_bundle / layout.CODEC_FRAMES_XML, int8_bundle / layout.codec_samples_xml(12), spec, codes
    )
    value = snr_db(f32, stored)
    print(f"stored codec against the f32 weights: {value:.1f} dB")
    assert value >= MIN_SNR_DB


def test_the_manifest_names_the_storage_and_what_f16_everywhere_measured(int8_bundle):
    label = layout.read_manifest(int8_bundle).precision["codec"]
    # the tiny checkpoint's f16 frame part measures ~32 dB: its frame part is stored f32
    assert label.startswith("frame part f32, sample parts f16 (f16 "), label
    assert "dB against f32" in label
    frames_bin = (int8_bundle / layout.CODEC_FRAMES_XML).with_suffix(".bin")
    samples_bin = (int8_bundle / layout.codec_samples_xml(12)).with_suffix(".bin")
    assert frames_bin.stat().st_size > samples_bin.stat().st_size  # (f32: the larger part)
    assert not any(p.name.startswith(".codec") for p in int8_bundle.iterdir())  # the reference is gone


def test_an_f32_policy_stores_f32_without_measuring(tiny_models):
    assert layout.read_manifest(tiny_models.bundle(weights="f32")).precision["codec"] == "f32"


def test_f16_everywhere_is_what_fails_on_the_tiny_checkpoint(tiny_models, tmp_path):
    """The measurement behind the label: f16 frame part under the gate, f16 sample parts above it."""
    checkpoint = load_checkpoint(tiny_models.checkpoint())
    spec, weights, core = checkpoint.spec.codec, checkpoint.codec_weights, ov.Core()
    for name, model in (
        ("frames", build_codec_frames(spec, weights)),
        ("s12", build_codec_samples(spec, weights, 12)),
    ):
        for precision in ("f16", "f32"):
            ov.save_model(model, tmp_path / f"{name}-{precision}.xml", compress_to_fp16=precision == "f16")
    codes = random_codes(spec, 48, seed=11)
    decode = {
        (fp, sp): _decode(core, tmp_path / f"frames-{fp}.xml", tmp_path / f"s12-{sp}.xml", spec, codes)
        for fp in ("f16", "f32")
        for sp in ("f16", "f32")
    }
    reference = decode[("f32", "f32")]
    assert snr_db(reference, decode[("f16", "f16")]) < MIN_SNR_DB
    assert snr_db(reference, decode[("f32", "f16")]) >= MIN_SNR_DB
    assert np.abs(reference).max() > 0.01  # a real signal, not silence
