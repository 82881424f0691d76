"""`qwen3tts bench`: speed, latency, memory and the share of the physical limit (see docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qwen3tts.settings import Settings


def _sizes(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--bundle", type=Path, help="bundle to measure (default: model.bundle setting)")
    source.add_argument(
        "--shape",
        choices=("tiny", "0.6b", "1.7b"),
        help="write and build a random checkpoint of this shape (kept in --work-dir)",
    )
    parser.add_argument(
        "--checkpoint", type=Path, help="the bundle's checkpoint (for --vs-reference with --bundle)"
    )
    parser.add_argument(
        "--work-dir", type=Path, help="where --shape builds (default: <cache>/bench, see docs/operations.md)"
    )
    parser.add_argument(
        "--weights",
        choices=("int8", "int4-cp", "int4", "f16", "f32"),
        default="int8",
        help="--shape build policy",
    )
    parser.add_argument(
        "--kv-cache-precision",
        choices=("u8", "f16", "bf16", "f32"),
        help="KV cache element type (default: engine.kv_cache_precision)",
    )
    parser.add_argument("--batch-sizes", type=_sizes, default=(1, 2, 4, 8), help="default 1,2,4,8")
    parser.add_argument(
        "--frames", type=int, default=32, help="frames per request, EOS disabled (default 32)"
    )
    parser.add_argument(
        "--prompt-tokens",
        type=int,
        default=48,
        help="talker prompt positions of the throughput runs (default 48); first-audio requests each speak a"
        " sentence of their own, so that the prefix cache cannot serve them",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per batch size; medians reported")
    parser.add_argument(
        "--ttfa-concurrency",
        type=_sizes,
        default=(1, 4),
        help="concurrent requests for time to first audio (default 1,4)",
    )
    parser.add_argument("--ttfa-rounds", type=int, default=5, help="rounds per concurrency level (default 5)")
    parser.add_argument("--profile", action="store_true", help="add OpenVINO per-op profiles (slows runs)")
    parser.add_argument("--vs-reference", action="store_true", help="also time the official implementation")
    parser.add_argument(
        "--reference-python",
        type=Path,
        default=Path("scripts/reference/.venv/bin/python"),
        help="python of the reference venv (default: the one scripts/reference/make_golden.sh creates)",
    )
    parser.add_argument("--reference-batch-sizes", type=_sizes, help="default: 1 and the largest batch size")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the full report as JSON")
    parser.add_argument("--plot", type=Path, metavar="OUT", help="write a PNG plot (needs matplotlib)")


def _resident_bytes() -> int:
    """VmRSS of this process (Linux; 0 elsewhere), read without importing anything heavy."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next(line for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0
    return int(line.split()[1]) * 1024


def _baseline_rss() -> dict[str, int]:
    """The interpreter with the CLI and numpy (the settings already import it): measured before the
    bench imports OpenVINO."""
    import numpy  # noqa: F401

    return {"python_numpy_and_cli": _resident_bytes()}


def bench(args: argparse.Namespace, settings: Settings) -> int:
    baseline = _baseline_rss()
    from qwen3tts.bench import report
    from qwen3tts.bench.suite import BenchOptions, run_suite
    from qwen3tts.paths import cache_dir

    if args.plot:
        report.require_matplotlib()
    if args.frames < 4:
        raise SystemExit("qwen3tts bench: --frames must be at least 4")
    options = BenchOptions(
        bundle=args.bundle or (None if args.shape else settings.model.bundle),
        shape=args.shape,
        work_dir=args.work_dir or cache_dir() / "bench",
        weights=args.weights,
        kv_cache_precision=args.kv_cache_precision,
        batch_sizes=args.batch_sizes,
        frames=args.frames,
        prompt_tokens=args.prompt_tokens,
        repeats=args.repeats,
        ttfa_concurrency=args.ttfa_concurrency,
        ttfa_rounds=args.ttfa_rounds,
        profile=args.profile,
        reference_python=args.reference_python if args.vs_reference else None,
        reference_batch_sizes=args.reference_batch_sizes or (1, max(args.batch_sizes)),
        checkpoint=args.checkpoint,
    )
    result = run_suite(options, settings, baseline)
    if args.json:
        report.write_json(result, args.json)
    if args.plot:
        report.plot(result, args.plot)
    sys.stdout.write(report.markdown(result))
    return 0
