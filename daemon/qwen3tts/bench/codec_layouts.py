"""Codec graph layouts side by side: resident growth, CPU time on the engine's chunk schedule, output.

Each variant is a bundle's codec compiled as it is, or reshaped: other chunk sizes (`sizes=3` runs
every chunk at 3 frames, `sizes=2+12` two sizes) or a dynamic frame axis (`frames=dynamic`, or
bounded `frames=1-12`) on the frame part (split bundles) or on the whole chunk graph (older
bundles; one graph then serves every size). Variants load one after another in ONE process; the
resident growth while each compiles and warms up is its memory (VmRSS, RssAnon, RssFile from
/proc/self/status). Then, round by round, every variant decodes the same random frames on the
engine's schedule (the first chunk, then the largest chunk at a time, the rest flushed), timed with
process CPU time; the report gives medians over rounds, the median per-round ratio to the first
variant, the first chunk's own cost (time to first audio) and the largest difference from the first
variant's audio.

    python -m qwen3tts.bench.codec_layouts --rounds 7 --frames 50 \\
        whole=var/bundle-old split=var/bundle-new 'dynamic=var/bundle-old,frames=dynamic' \\
        'only2=var/bundle-old,sizes=2' 'ic=var/bundle-new,SNIPPETS_MODE=IGNORE_CALLBACK'

Anything else after the bundle is an OpenVINO compile property. Defaults: f32, one inference thread,
no pinning (on a loaded machine the CPU time of one thread is what compares; see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.bench.memory import status_bytes
from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs.codec import CODES, HIDDEN
from qwen3tts.runtime.codec import CodecChunkModels, StreamingCodec

DEFAULT_PROPERTIES = {
    "INFERENCE_PRECISION_HINT": "f32",
    "INFERENCE_NUM_THREADS": "1",
    "ENABLE_CPU_PINNING": "NO",
}


@dataclass(frozen=True)
class Variant:
    label: str
    bundle: Path
    sizes: tuple[int, ...] | None = None  # chunk sizes other than the bundle's
    frames: str | None = None  # "dynamic" or "LO-HI": the frame axis of the frame part / whole graph
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Variant:
        label, _, rest = text.partition("=")
        bundle, *options = rest.split(",")
        if not label or not bundle:
            raise argparse.ArgumentTypeError(f"expected label=bundle[,option...], got {text!r}")
        sizes, frames, properties = None, None, {}
        for option in options:
            key, _, value = option.partition("=")
            if key == "sizes":
                sizes = tuple(int(v) for v in value.split("+"))
            elif key == "frames":
                frames = value
            else:
                properties[key] = value
        return cls(label, Path(bundle), sizes, frames, properties)


def _frame_axis(frames: str) -> ov.Dimension:
    if frames == "dynamic":
        return ov.Dimension()
    low, _, high = frames.partition("-")
    return ov.Dimension(int(low), int(high))


def compile_variant(core: ov.Core, variant: Variant) -> CodecChunkModels:
    manifest = layout.read_manifest(variant.bundle, verify_files=False)
    frames_xml, chunk_xmls = layout.codec_graph_files(manifest)
    props = {**DEFAULT_PROPERTIES, **variant.properties}
    sizes = variant.sizes or manifest.codec_chunks
    source = chunk_xmls[max(chunk_xmls)]  # every size is this graph reshaped

    def reshaped(xml: str, size, name: str, per_frame: int = 1) -> ov.CompiledModel:
        model = core.read_model(variant.bundle / xml)
        shape = model.input(name).get_partial_shape()
        shape[1 if name == CODES else 2] = size * per_frame if isinstance(size, int) else size
        model.reshape({name: shape})
        return core.compile_model(model, "CPU", props)

    front = None
    if frames_xml:  # split: sample parts per size, the frame part (dynamic, or as asked)
        front = reshaped(frames_xml, _frame_axis(variant.frames or "dynamic"), CODES)
        rate = core.read_model(variant.bundle / source).input(HIDDEN).get_shape()[2] // max(chunk_xmls)
        compiled = {size: reshaped(source, size, HIDDEN, rate) for size in sizes}
    elif variant.frames:  # whole layout, one dynamic graph for every size
        one = reshaped(source, _frame_axis(variant.frames), CODES)
        compiled = dict.fromkeys(sizes, one)
    else:
        compiled = {size: reshaped(source, size, CODES) for size in sizes}
    models = CodecChunkModels(compiled, manifest.spec.codec, front)
    models.warm_up()
    return models


def decode(models: CodecChunkModels, codes: np.ndarray) -> tuple[np.ndarray, float]:
    """(PCM of the engine's schedule, CPU seconds of its first chunk)."""
    first, last = models.chunk_sizes[0], models.chunk_sizes[-1]
    stream = StreamingCodec(models)
    started = time.process_time()
    pieces = [stream.decode(codes[:first])]
    first_chunk = time.process_time() - started
    pieces += [stream.decode(codes[i : i + last]) for i in range(first, len(codes), last)]
    return np.concatenate([*pieces, stream.flush()]), first_chunk


def run(variants: list[Variant], rounds: int, frames: int) -> list[dict]:
    core = ov.Core()
    loaded = {}
    for variant in variants:
        gc.collect()
        before = status_bytes()
        models = compile_variant(core, variant)
        after = status_bytes()
        growth = {k: after[k] - before[k] for k in ("VmRSS", "RssAnon", "RssFile")}
        loaded[variant.label] = (models, growth)
    spec = next(iter(loaded.values()))[0].spec
    codes = np.random.default_rng(1).integers(0, spec.codebook_size, (frames, spec.num_quantizers))
    reference = decode(next(iter(loaded.values()))[0], codes)[0]
    per_frame = {label: [] for label in loaded}
    first_chunk = {label: [] for label in loaded}
    diffs = {}
    for _ in range(rounds):
        for label, (models, _) in loaded.items():
            started = time.process_time()
            pcm, first = decode(models, codes)
            per_frame[label].append(1e3 * (time.process_time() - started) / frames)
            first_chunk[label].append(1e3 * first)
            diffs[label] = float(np.abs(pcm - reference).max())
    base = variants[0].label
    return [
        {
            "label": label,
            "chunk_sizes": list(models.chunk_sizes),
            "rss_growth_mib": {k: v / 2**20 for k, v in growth.items()},
            "cpu_ms_per_frame": statistics.median(per_frame[label]),
            "ratio": statistics.median(a / b for a, b in zip(per_frame[label], per_frame[base], strict=True)),
            "first_chunk_cpu_ms": statistics.median(first_chunk[label]),
            "max_abs_diff": diffs[label],
        }
        for label, (models, growth) in loaded.items()
    ]


def render(rows: list[dict], rounds: int, frames: int) -> str:
    lines = [
        f"{frames} frames on the engine schedule, {rounds} rounds, process CPU time (medians)",
        "| variant | chunks | RSS growth MiB (anon / file) | CPU ms per frame | ratio | first chunk CPU ms "
        "| max diff |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        g, sizes = r["rss_growth_mib"], "+".join(map(str, r["chunk_sizes"]))
        lines.append(
            f"| {r['label']} | {sizes} | {g['VmRSS']:.0f} ({g['RssAnon']:.0f} / {g['RssFile']:.0f}) | "
            f"{r['cpu_ms_per_frame']:.1f} | x{r['ratio']:.3f} | "
            f"{r['first_chunk_cpu_ms']:.0f} | {r['max_abs_diff']:.1e} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.codec_layouts", description=__doc__)
    parser.add_argument("variants", nargs="+", type=Variant.parse)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=50)
    args = parser.parse_args(argv)
    print(render(run(args.variants, args.rounds, args.frames), args.rounds, args.frames))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
