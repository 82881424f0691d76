"""`qwen3tts tiny OUT`: write a random Qwen3-TTS checkpoint in the exact Hugging Face release layout."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from qwen3tts.settings import Settings

VARIANTS = ("custom_voice", "voice_design", "base")
SHAPES = ("tiny", "tiny-1.7b", "0.6b", "1.7b")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="output directory (created)")
    parser.add_argument("--variant", choices=VARIANTS, default="custom_voice", help="tts_model_type")
    parser.add_argument(
        "--shape",
        choices=SHAPES,
        default="tiny",
        help="tiny (0.6B style, seconds, a few MB), tiny-1.7b (1.7B style), or the real 0.6b/1.7b shapes",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed; same arguments give the same bytes")


def tiny(args: argparse.Namespace, settings: Settings) -> int:
    from qwen3tts.model.tiny import write_checkpoint

    started = time.perf_counter()
    path = write_checkpoint(args.out, variant=args.variant, shape=args.shape, seed=args.seed)
    size = sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())
    print(
        f"wrote {args.variant} {args.shape} checkpoint to {path} ({size / 1e6:.1f} MB, "
        f"{time.perf_counter() - started:.1f} s)"
    )
    return 0
