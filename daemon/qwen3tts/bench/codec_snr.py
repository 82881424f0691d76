"""Signal-to-noise ratio of a lossy codec precision against the f32 decode of the same codes.

The codec's output is audio, so a precision is judged by what it does to the waveform: random frames
decoded in the bundle's streaming chunks, once with f32 activations and once with the candidate
compile properties; SNR = 10 log10(sum ref^2 / sum (out - ref)^2). The device plan only picks a lossy
codec precision by default if this stays >= devices.CODEC_MIN_SNR_DB (docs/fidelity.md).

    python -m qwen3tts.bench.codec_snr BUNDLE [--precision bf16] [--frames 96]
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model import bundle as layout
from qwen3tts.runtime.codec import CodecChunkModels, StreamingCodec

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def decode(bundle: Path, properties: Mapping[str, str], codes: np.ndarray, core: ov.Core) -> np.ndarray:
    """PCM of `codes` [n, Q] through the bundle's chunk graphs compiled with `properties`."""
    manifest = layout.read_manifest(bundle, verify_files=False)
    frames_xml, chunk_xmls = layout.codec_graph_files(manifest)
    compiled = {
        frames: core.compile_model(bundle / xml, "CPU", dict(properties))
        for frames, xml in chunk_xmls.items()
    }
    frames = core.compile_model(bundle / frames_xml, "CPU", dict(properties)) if frames_xml else None
    stream = StreamingCodec(CodecChunkModels(compiled, manifest.spec.codec, frames))
    return np.concatenate([stream.decode(codes), stream.flush()])


def snr_db(reference: np.ndarray, output: np.ndarray) -> float:
    error = output.astype(np.float64) - reference.astype(np.float64)
    noise = float(np.sum(error**2))
    return (
        float("inf")
        if noise == 0
        else 10 * np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / noise)
    )


def measure(bundle: Path, properties: Mapping[str, str], frames: int = 96, seed: int = 1) -> dict:
    spec = layout.read_manifest(bundle, verify_files=False).spec.codec
    codes = np.random.default_rng(seed).integers(0, spec.codebook_size, (frames, spec.num_quantizers))
    core = ov.Core()
    reference = decode(bundle, F32, codes, core)
    output = decode(bundle, properties, codes, core)
    return {
        "snr_db": snr_db(reference, output),
        "max_abs_error": float(np.abs(output - reference).max()),
        "reference_rms": float(np.sqrt(np.mean(reference.astype(np.float64) ** 2))),
        "frames": frames,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.codec_snr", description=__doc__)
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--precision", default="bf16", help="INFERENCE_PRECISION_HINT to compare with f32")
    parser.add_argument("--frames", type=int, default=96)
    args = parser.parse_args(argv)
    result = measure(args.bundle, {"INFERENCE_PRECISION_HINT": args.precision}, args.frames)
    print(
        f"codec {args.precision} vs f32: SNR {result['snr_db']:.1f} dB, max abs error "
        f"{result['max_abs_error']:.2e} (PCM rms {result['reference_rms']:.3f}, {result['frames']} frames)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
