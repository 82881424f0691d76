"""`qwen3tts build --checkpoint DIR --out BUNDLE [--weights ...] [--codec-variant ...]`: -> a bundle."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from qwen3tts.errors import ConfigError
from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint", type=Path, help="release checkpoint directory (default: model.checkpoint setting)"
    )
    parser.add_argument("--out", type=Path, help="bundle directory to write (default: model.bundle setting)")
    parser.add_argument(
        "--weights",
        choices=("int8", "int4-cp", "int4", "f16", "f32"),
        help="weight precision policy (default: model.weights setting); f32 is for parity checks; int4-cp"
        " / int4 put INT4 weights on the code predictor / also the talker (docs/fidelity.md)",
    )
    parser.add_argument(
        "--codec-variant",
        choices=("bf16-tail", "none"),
        default="bf16-tail",
        help="lossy codec graphs to try beside the exact ones; kept only if their SNR against the exact"
        " decode passes the gate on this checkpoint (default bf16-tail; docs/fidelity.md)",
    )


def build(args: argparse.Namespace, settings: Settings) -> int:
    from qwen3tts.model.build import build_bundle
    from qwen3tts.model.bundle import describe_bundle

    out = args.out or settings.model.bundle
    checkpoint = args.checkpoint or settings.model.checkpoint
    if checkpoint is None:
        raise ConfigError("build: give --checkpoint DIR (or set model.checkpoint); see docs/models.md")
    started = time.perf_counter()
    chunks = (settings.engine.first_chunk_frames, settings.engine.chunk_frames)
    variants = () if args.codec_variant == "none" else (args.codec_variant,)
    build_bundle(
        checkpoint,
        out,
        weights=args.weights or settings.model.weights,
        codec_chunks=chunks,
        codec_variants=variants,
    )
    print(describe_bundle(out))
    print(f"built in {time.perf_counter() - started:.1f} s")
    return 0
