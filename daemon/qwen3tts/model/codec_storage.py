"""The codec's stored precision, decided by measurement against the f32 decode of the checkpoint.

The codec is the one graph whose output the listener hears directly, and it is exact only if its
weights are: f16-stored weights (which the CPU plugin widens back to f32) measured 29.9 dB SNR against
the f32 decode on the random 0.6B checkpoint and 32-33 dB on the tiny ones, below the MIN_SNR_DB any
lossy codec precision must keep (docs/fidelity.md). The rounding is the frame part's (quantizer,
transformer, upsampling, the first decoder blocks: 90 % of the weights); the sample part in f16 keeps
38-43 dB. So `qwen3tts build` writes the f32 graphs as the reference, then keeps the cheapest storage
that passes on this checkpoint: f16 everywhere, else f32 frame part with f16 sample parts, else f32.

On the CPU the stored precision changes the bundle's size, not the resident memory: the plugin
compiles every codec weight to its own f32 copy either way, and the file's pages go back after the
warm-up (runtime/warm_up.py). GPU and NPU plugins run f16 whatever is stored.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model import bundle as layout
from qwen3tts.model.codec_gate import EXACT, GATE_FRAMES, MIN_SNR_DB, random_codes, snr_db, stream_decode
from qwen3tts.model.spec import CodecDecoderSpec

REFERENCE_DIR = ".codec-f32-reference"  # inside the bundle being built; removed before the manifest
GATE_SEED = 2  # the same held-out codes as the bf16-tail gate
# (frame part, sample parts) in the order tried: the first that passes is stored
CANDIDATES = (("f16", "f16"), ("f32", "f16"))


def write_codec_graphs(
    spec: CodecDecoderSpec,
    weights: Mapping[str, np.ndarray],
    out: Path,
    chunks: tuple[int, ...],
    precision: str,
    report: Callable[[str], None],
) -> str:
    """Write the frame part and one sample part per chunk size; returns the manifest's codec label.

    `precision` f32 stores f32; f16 (the policies' default) stores f16 only where the gate measured it
    harmless, and the f32 graphs stay in `reference_dir(out)` for the bf16-tail gate until
    `remove_reference(out)`.
    """
    from qwen3tts.model.graphs.codec import build_codec_frames, build_codec_samples

    models = {layout.CODEC_FRAMES_XML: build_codec_frames(spec, weights)}
    for frames in chunks:
        models[layout.codec_samples_xml(frames)] = build_codec_samples(spec, weights, frames)
    if precision == "f32":  # the stored graphs are the reference
        _store(models, out, ("f32", "f32"))
        return "f32"
    reference = reference_dir(out)
    reference.mkdir(exist_ok=True)
    for name, model in models.items():
        ov.save_model(model, reference / name, compress_to_fp16=False)
    gate = _StorageGate(spec, reference, max(chunks))
    tried = []
    for candidate in CANDIDATES:
        _store(models, out, candidate)
        value = gate.snr(out)
        tried.append(f"{_label(candidate)} {value:.1f} dB")
        report(f"codec weights {_label(candidate)}: {value:.1f} dB against f32 (gate {MIN_SNR_DB:.0f} dB)")
        if value >= MIN_SNR_DB:
            return f"{_label(candidate)} ({'; '.join(tried)} against f32)"
    _store(models, out, ("f32", "f32"))
    return f"f32 ({'; '.join(tried)} against f32)"


def reference_dir(bundle_dir: Path) -> Path:
    return Path(bundle_dir) / REFERENCE_DIR


def remove_reference(bundle_dir: Path) -> None:
    shutil.rmtree(reference_dir(bundle_dir), ignore_errors=True)


def reference_decode(core: ov.Core, bundle_dir: Path, spec: CodecDecoderSpec, chunk: int, codes: np.ndarray):
    """PCM of `codes` through the f32 reference graphs (the largest chunk's sample part); an f32 bundle's
    own graphs are its reference."""
    reference = reference_dir(bundle_dir) if reference_dir(bundle_dir).is_dir() else Path(bundle_dir)
    frame_part = core.compile_model(reference / layout.CODEC_FRAMES_XML, "CPU", EXACT)
    sample_part = core.compile_model(reference / layout.codec_samples_xml(chunk), "CPU", EXACT)
    return stream_decode(frame_part, sample_part, spec, codes)


def _label(candidate: tuple[str, str]) -> str:
    frames, samples = candidate
    return frames if frames == samples else f"frame part {frames}, sample parts {samples}"


def _store(models: Mapping[str, ov.Model], out: Path, candidate: tuple[str, str]) -> None:
    frames, samples = candidate
    for name, model in models.items():
        stored = frames if name == layout.CODEC_FRAMES_XML else samples
        ov.save_model(model, out / name, compress_to_fp16=stored == "f16")


class _StorageGate:
    """SNR of the stored graphs' decode against the f32 graphs' decode, on the held-out gate codes."""

    def __init__(self, spec: CodecDecoderSpec, reference: Path, chunk: int):
        self.core, self.spec, self.chunk = ov.Core(), spec, chunk
        frames = -(-GATE_FRAMES // chunk) * chunk
        self.codes = random_codes(spec, frames, GATE_SEED)
        self.reference = reference_decode(self.core, reference.parent, spec, chunk, self.codes)

    def snr(self, out: Path) -> float:
        frame_part = self.core.compile_model(out / layout.CODEC_FRAMES_XML, "CPU", EXACT)
        sample_part = self.core.compile_model(out / layout.codec_samples_xml(self.chunk), "CPU", EXACT)
        return snr_db(self.reference, stream_decode(frame_part, sample_part, self.spec, self.codes))
