"""Signal-to-noise ratio of a lossy codec precision against the f32 decode of the same codes.

The codec's output is audio, so a precision is judged by what it does to the waveform: random frames
decoded in the bundle's streaming chunks, once with f32 activations and once with the candidate
compile properties, or through one of the bundle's codec variants (compiled f32: its precision is in
the graph); SNR = 10 log10(sum ref^2 / sum (out - ref)^2). The device plan only picks a lossy codec
precision by default if this stays >= devices.CODEC_MIN_SNR_DB (docs/fidelity.md). `--rounds N` also
times one 12-frame chunk of each in alternation (process CPU time, one thread): the CPU-time ratio.

    python -m qwen3tts.bench.codec_snr BUNDLE [--precision bf16 | --variant bf16-tail] [--frames 96]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model import bundle as layout
from qwen3tts.model.codec_gate import random_codes, snr_db
from qwen3tts.runtime.codec import CodecChunkModels, StreamingCodec

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def chunk_models(
    bundle: Path, properties: Mapping[str, object], core: ov.Core, variant: str | None = None
) -> CodecChunkModels:
    """The bundle's chunk graphs (or those of `variant`) compiled on the CPU with `properties`."""
    manifest = layout.read_manifest(bundle, verify_files=False)
    frames_xml, chunk_xmls = layout.codec_graph_files(manifest, variant)  # a variant: its sample parts
    compiled = {
        frames: core.compile_model(bundle / xml, "CPU", dict(properties))
        for frames, xml in chunk_xmls.items()
    }
    frames = core.compile_model(bundle / frames_xml, "CPU", dict(properties)) if frames_xml else None
    return CodecChunkModels(compiled, manifest.spec.codec, frames)


def decode(models: CodecChunkModels, codes: np.ndarray) -> np.ndarray:
    """PCM of `codes` [n, Q] streamed through `models` in their chunk sizes."""
    stream = StreamingCodec(models)
    return np.concatenate([stream.decode(codes), stream.flush()])


def measure(
    bundle: Path, properties: Mapping[str, str], frames: int = 96, seed: int = 1, variant: str | None = None
) -> dict:
    spec = layout.read_manifest(bundle, verify_files=False).spec.codec
    codes = random_codes(spec, frames, seed)
    core = ov.Core()
    reference = decode(chunk_models(bundle, F32, core), codes)
    output = decode(chunk_models(bundle, properties, core, variant), codes)
    return {
        "snr_db": snr_db(reference, output),
        "max_abs_error": float(np.abs(output - reference).max()),
        "reference_rms": float(np.sqrt(np.mean(reference.astype(np.float64) ** 2))),
        "frames": frames,
    }


def cpu_time_ratio(
    bundle: Path, properties: Mapping[str, str], rounds: int, variant: str | None = None, calls: int = 3
) -> tuple[float, float, float]:
    """(exact CPU s, candidate CPU s, median per-round ratio) for one largest chunk, one thread each."""
    one_thread = {"INFERENCE_NUM_THREADS": 1, "ENABLE_CPU_PINNING": False}
    core = ov.Core()
    exact = chunk_models(bundle, {**F32, **one_thread}, core)
    candidate = chunk_models(bundle, {**properties, **one_thread}, core, variant)
    size = max(exact.chunk_sizes)
    codes = random_codes(exact.spec, size, seed=3)
    times: dict[str, list[float]] = {"exact": [], "candidate": []}
    for _ in range(rounds):
        for label, models in (("exact", exact), ("candidate", candidate)):
            state = models.initial_state()
            best = float("inf")
            for _ in range(calls):
                started = time.process_time()
                models.run(codes, state)
                best = min(best, time.process_time() - started)
            times[label].append(best)
    ratio = statistics.median(c / e for c, e in zip(times["candidate"], times["exact"], strict=True))
    return statistics.median(times["exact"]), statistics.median(times["candidate"]), ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.codec_snr", description=__doc__)
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--precision", default="bf16", help="INFERENCE_PRECISION_HINT to compare with f32")
    parser.add_argument(
        "--variant", help="a codec variant of the bundle (compiled f32) instead of --precision"
    )
    parser.add_argument("--frames", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=0, help="also time both, interleaved, this many rounds")
    args = parser.parse_args(argv)
    properties = F32 if args.variant else {"INFERENCE_PRECISION_HINT": args.precision}
    label = f"variant {args.variant}" if args.variant else args.precision
    result = measure(args.bundle, properties, args.frames, variant=args.variant)
    print(
        f"codec {label} vs f32: SNR {result['snr_db']:.1f} dB, max abs error "
        f"{result['max_abs_error']:.2e} (PCM rms {result['reference_rms']:.3f}, {result['frames']} frames)"
    )
    if args.rounds:
        exact, candidate, ratio = cpu_time_ratio(args.bundle, properties, args.rounds, args.variant)
        print(
            f"CPU time per chunk, one thread: f32 {exact * 1e3:.0f} ms, "
            f"{label} {candidate * 1e3:.0f} ms, ×{ratio:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
