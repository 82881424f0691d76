"""The fused code-predictor frame in variants, in one process: builds of the native library (this tree's and
others, e.g. main's before a kernel change) and its mapped weights in small or 2 MiB pages.

Separate processes will not do for a change of a few percent here: on a 2-vCPU VM the same frame ran
from 42 to 57 ms per frame in one process or the next, for the life of each process, and from one
predictor to the next within a process too (docs/benchmarks.md, "the AVX2 kernel's decode row"). So every
variant is built `--instances` times, each over its own copy of the random code predictor's IR (its own
file, page cache and scratch), and the rounds call them in a new order each time. Reported per variant:
the median ms per frame over its instances' rounds, GB/s of weights, its share of the read limit (the
native streaming read of a buffer the size of one step's footprint, the five layers and the fifteen heads,
measured after each batch size's rounds: bench/read_limit.py), and the median per-round ratio to the first
variant (this tree's library, small pages).

    python -m qwen3tts.bench.native_variants --shape 0.6b --batch-sizes 1 --rounds 25 --instances 3 \\
        [--library other/libqwen3tts_native.so] [--pages small,huge] [--threads 2] [--work-dir dir]
        [--weights int8|int4_sym_g128] [--json out]
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import tempfile
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.bench import read_limit
from qwen3tts.bench.native_frame import add_frame_arguments, frame_bytes, random_predictor
from qwen3tts.bench.rounds import emit, time_in_rounds
from qwen3tts.runtime.huge_pages import evict_from_page_cache, huge_mapped_bytes, map_in_huge_pages
from qwen3tts.runtime.native import DEFAULT_LIBRARY
from qwen3tts.runtime.native_decode.predictor import NativeCodePredictor, declare
from qwen3tts.runtime.native_decode.tensors import read_tensors


def build_variants(
    spec, source: Path, libraries: list[Path], pages: list[str], instances: int, threads: int, work
):
    """{variant name: [(predictor, its IR's .bin, its tensors)] * instances}; the mapped models stay alive
    with them."""
    core, variants = ov.Core(), {}
    for number, library in enumerate(libraries):
        copy = work / f"library-{number}.so"  # one file per build: the loader never shares two builds
        shutil.copyfile(library, copy)
        cdll = ctypes.CDLL(str(copy))
        if not declare(cdll):
            raise SystemExit(f"{library} has no fused code predictor")
        cdll.qwen3tts_native_isa.restype = ctypes.c_char_p
        isa = cdll.qwen3tts_native_isa().decode()
        for mode in pages:
            built = []
            for instance in range(instances):
                ir = _copy_ir(source, work / f"ir-{number}-{mode}-{instance}")
                model = core.read_model(str(ir))
                tensors = read_tensors(model, spec.code_predictor)
                predictor = NativeCodePredictor.build(
                    cdll, spec.code_predictor, tensors, isa, threads, keep=(model,)
                )
                if mode == "huge":
                    map_in_huge_pages(ir.with_suffix(".bin"))
                built.append((predictor, ir.with_suffix(".bin"), tensors))
            variants[f"library {number} ({library.name}, {isa}), {mode} pages"] = built
    return variants


def _copy_ir(source: Path, directory: Path) -> Path:
    """A copy of the IR, written back and evicted from the page cache: the frame then reads it in through
    its mapping, as the daemon does a bundle it did not write."""
    directory.mkdir(parents=True, exist_ok=True)
    for suffix in (".xml", ".bin"):
        target = directory / f"code_predictor{suffix}"
        shutil.copyfile(source.with_suffix(suffix), target)
        evict_from_page_cache(target, write_back=True)
    return directory / "code_predictor.xml"


def time_variants(spec, variants: dict, batch: int, rounds: int, weight_bytes: int) -> dict:
    rng = np.random.default_rng(batch)
    vocab = spec.code_predictor.vocab_size
    feeds = (
        rng.standard_normal((batch, spec.talker.hidden_size)).astype(np.float32),
        rng.integers(0, vocab, batch),
        rng.random((batch, spec.code_predictor.num_code_groups - 1, vocab), dtype=np.float32),
        np.where(np.arange(batch) % 2 == 0, 0.0, 0.9).astype(np.float32),
        np.full(batch, 50, np.int64),
        np.ones(batch, np.float32),
    )
    timers = {
        (name, i): (lambda p=predictor: p.frame(*feeds))
        for name, built in variants.items()
        for i, (predictor, _, _) in enumerate(built)
    }
    samples = time_in_rounds(timers, rounds, shuffle_seed=batch)
    first = next(iter(variants))
    base = [statistics.median(group) for group in zip(*_of(samples, first), strict=True)]
    report = {}
    for name, built in variants.items():
        mine = _of(samples, name)
        per_round = [statistics.median(group) for group in zip(*mine, strict=True)]
        flat = [value for s in mine for value in s]
        report[name] = {
            "median_ms": 1e3 * statistics.median(flat),
            "gb_per_s": weight_bytes / statistics.median(flat) / 1e9,
            "ratio_to_first": statistics.median(v / b for v, b in zip(per_round, base, strict=True)),
            "instances_median_ms": [round(1e3 * statistics.median(s), 2) for s in mine],
            "mib_in_2mib_pages": [huge_mapped_bytes(path) / 2**20 for _, path, _ in built],
        }
    return report


def _of(samples: dict, variant: str) -> list[list[float]]:
    """The rounds' seconds of each instance of `variant`."""
    return [seconds for (name, _), seconds in samples.items() if name == variant]


def step_footprint(tensors) -> int:
    """Distinct weight bytes a frame's steps read: every layer matrix and every head, each once."""
    matrices = [w for layer in tensors.layers for w in layer.values()] + tensors.heads
    matrices += [tensors.projection] if tensors.projection is not None else []
    return sum(w.data.nbytes for w in matrices)


def run(shape, batches, rounds, instances, libraries, pages, threads, work_dir=None, weights="int8") -> dict:
    reader, unavailable = read_limit.load()
    if reader is None:
        raise SystemExit(unavailable)
    with tempfile.TemporaryDirectory(prefix="native-variants-") as tmp:
        spec, source = random_predictor(shape, work_dir or Path(tmp), precision=weights)
        variants = build_variants(spec, source, libraries, pages, instances, threads, Path(tmp))
        tensors = next(iter(variants.values()))[0][2]
        weight_bytes, footprint = frame_bytes(tensors), step_footprint(tensors)
        report = {
            "shape": shape,
            "threads": threads,
            "instances": instances,
            "weights": weights,
            "weight_bytes_per_frame": weight_bytes,
        }
        report["batches"] = {}
        for batch in batches:
            timed = time_variants(spec, variants, batch, rounds, weight_bytes)
            limit = reader.measure(footprint, threads)
            for v in timed.values():
                v["share_of_read_limit"] = v["gb_per_s"] * 1e9 / limit.bytes_per_s
            report["batches"][batch] = {
                "read_limit": {"gb_per_s": limit.bytes_per_s / 1e9, "of": limit.describe()}
            }
            report["batches"][batch]["variants"] = timed
        for built in variants.values():
            for predictor, _, _ in built:
                predictor.close()
        return report


def render(report: dict) -> str:
    lines = [
        f"code predictor {report['shape']}: {report['weight_bytes_per_frame'] / 1e6:.0f} MB of "
        f"{report['weights'].upper()} weights per "
        f"frame, {report['threads']} threads, {report['instances']} instances per variant; median ms per "
        "frame, GB/s, median per-round ratio to the first variant",
        "| batch | variant | ms | GB/s | share of the read limit | ratio | instances' medians (ms) "
        "| MiB in 2 MiB pages |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for batch, measured in report["batches"].items():
        limit = measured["read_limit"]
        lines.append(f"| {batch} | read limit: {limit['of']} | | {limit['gb_per_s']:.1f} | | | | |")
        lines += [_variant_row(batch, name, v) for name, v in measured["variants"].items()]
    return "\n".join(lines)


def _variant_row(batch, name: str, v: dict) -> str:
    instances = ", ".join(map(str, v["instances_median_ms"]))
    pages = ", ".join(f"{mib:.0f}" for mib in v["mib_in_2mib_pages"])
    share = 100 * v["share_of_read_limit"]
    return (
        f"| {batch} | {name} | {v['median_ms']:.1f} | {v['gb_per_s']:.1f} | {share:.0f} % "
        f"| x{v['ratio_to_first']:.3f} | {instances} | {pages} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.native_variants", description=__doc__)
    add_frame_arguments(parser, batch_sizes="1", rounds=25)
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument(
        "--library", type=Path, action="append", default=[], help="another build (repeatable)"
    )
    parser.add_argument("--pages", default="small,huge", help="small, huge or both, comma-separated")
    args = parser.parse_args(argv)
    pages = args.pages.split(",")
    if not set(pages) <= {"small", "huge"}:
        parser.error(f"--pages: small and/or huge, not {args.pages}")
    batches = [int(b) for b in args.batch_sizes.split(",")]
    libraries = [DEFAULT_LIBRARY, *args.library]
    report = run(
        args.shape,
        batches,
        args.rounds,
        args.instances,
        libraries,
        pages,
        args.threads,
        args.work_dir,
        args.weights,
    )
    return emit(render(report), report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
