"""The native talker step (runtime/native_decode/talker.py) against the plugin's paged talker, one process.

A random talker of the real shape (`--shape 0.6b`: 28 layers, codec_head) is built with the bundle
builder's graph (model/graphs/talker.py) and INT8_SYM compression, saved and read back as a bundle's IR
is; the plugin runs its PagedAttention copy as the daemon does (the daemon's properties: u8 KV cache), the
native talker reads the same mapped tensors, with its own cache of each kind `--caches` names (u8, the
daemon's default, and / or f16; of each `--library` build too), side by side in the same rounds, each
round in a new order. Each batch's sequences are first prefilled with `--context` positions on both;
then round by round each path runs one decode step (one row per sequence). Reported: median ms per step,
GB/s of INT8 weights read per step (every layer matrix and codec_head once), and the median per-round
ratio to the plugin.

    python -m qwen3tts.bench.native_talker --shape 0.6b --batch-sizes 1,8 --rounds 7 [--context 64]
        [--threads 2] [--caches u8,f16] [--library another/build.so ...] [--json out] [--work-dir dir]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import tempfile
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.bench.native_frame import daemon_properties
from qwen3tts.bench.rounds import summarise, table_rows, time_in_rounds
from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.model.checkpoint import read_json
from qwen3tts.model.compression import save_graph
from qwen3tts.model.graphs.talker import build_talker, to_paged
from qwen3tts.model.spec import TalkerSpec
from qwen3tts.model.spec_parse import parse_model_spec
from qwen3tts.model.tensor_layout import talker_tensor_shapes
from qwen3tts.model.tiny import write_checkpoint
from qwen3tts.runtime.native import DEFAULT_LIBRARY
from qwen3tts.runtime.native_decode import talker as native_talker
from qwen3tts.runtime.native_decode.talker_tensors import read_talker_tensors
from qwen3tts.runtime.paged_talker import PagedTalker


def random_talker(shape: str, out: Path, seed: int = 0):
    """(spec, path of the saved INT8 talker IR) of a random checkpoint of `shape`; reused if `out` has it."""
    root = out / "checkpoint"
    if not (root / "config.json").is_file():
        write_checkpoint(root, shape=shape, seed=seed, configs_only=True)
    spec = parse_model_spec(
        read_json(root / "config.json"),
        read_json(root / "generation_config.json"),
        read_json(root / "speech_tokenizer" / "config.json"),
    )
    path = out / "talker.xml"
    if not path.is_file():
        save_random_talker(spec.talker, path, seed)
    return spec, path


def save_random_talker(talker: TalkerSpec, path: Path, seed: int = 0) -> None:
    """The talker graph of `talker`'s shape with random weights, INT8_SYM compressed, saved at `path`."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, dims in talker_tensor_shapes(talker).items():
        if not name.startswith(("talker.model.layers.", "talker.model.norm", "talker.codec_head")):
            continue  # the embeddings and text projection are outside the graph
        if name.endswith("norm.weight"):
            weights[name] = (1.0 + 0.1 * rng.standard_normal(dims)).astype(np.float32)
        else:
            weights[name] = 0.02 * rng.standard_normal(dims, dtype=np.float32)
    save_graph(build_talker(talker, weights), path, "int8")


def step_bytes(tensors) -> int:
    """INT8 weight bytes one step reads: every layer matrix and codec_head once."""
    return sum(w.data.nbytes for layer in tensors.layers for w in layer.values()) + tensors.head.data.nbytes


def run(shape, batches, rounds, context, threads, work_dir=None, caches=("u8",), libraries=()) -> dict:
    with tempfile.TemporaryDirectory(prefix="native-talker-") as tmp:
        spec, path = random_talker(shape, work_dir or Path(tmp))
        core = ov.Core()
        model = core.read_model(str(path))
        tensors = read_talker_tensors(model, spec.talker)
        per_seq = -(-(context + rounds + 2) // native_talker.BLOCK_SIZE)
        blocks = max(batches) * per_seq
        natives, isa = {}, None
        for index, library in enumerate([DEFAULT_LIBRARY, *libraries]):
            cdll = ctypes.CDLL(str(library))
            if not native_talker.declare(cdll):
                raise SystemExit(f"{library} has no native talker with a u8 cache (rebuild native/)")
            cdll.qwen3tts_native_isa.restype = ctypes.c_char_p
            isa = isa or cdll.qwen3tts_native_isa().decode()
            which = f"library {index} ({Path(library).name}), " if libraries else ""
            for cache in caches:
                name = f"native step ({which}{isa}, {threads} threads, {cache} cache)"
                natives[name] = native_talker.NativeTalker.build(
                    cdll, spec.talker, tensors, isa, threads, blocks, cache, keep=(model,)
                )
        props = daemon_properties(core, "talker", threads, kv_cache="u8")  # the daemon's KV cache default
        plugin = PagedTalker(core.compile_model(to_paged(model), "CPU", props), blocks)
        weight_bytes = step_bytes(tensors)
        report = {"shape": shape, "threads": threads, "isa": isa, "context": context}
        report["weight_bytes_per_step"] = weight_bytes
        report["batches"] = {
            batch: _time_batch(spec, batch, rounds, context, per_seq, plugin, natives, weight_bytes)
            for batch in batches
        }
        for native in natives.values():
            native.close()
        return report


def _time_batch(spec, batch, rounds, context, per_seq, plugin, natives, weight_bytes) -> dict:
    rng = np.random.default_rng(batch)
    hidden = spec.talker.hidden_size
    tables = [list(range(s * per_seq, (s + 1) * per_seq)) for s in range(batch)]

    def chunks(rows: int, past: int) -> list[TalkerChunk]:
        return [
            TalkerChunk(s, rng.standard_normal((rows, hidden)).astype(np.float32), past, tables[s])
            for s in range(batch)
        ]

    def on_plugin(step):
        return plugin.step([(c.embeddings, c.past_len, c.block_table) for c in step])

    prefill = chunks(context, 0)
    calls = {"plugin": on_plugin, **{name: native.talker for name, native in natives.items()}}
    for call in calls.values():
        call(prefill)
    # the same decode steps for every path, each path at its own next one per call (time_in_rounds calls
    # each timer once untimed, then once a round); a new order every round: the path right after the
    # plugin's ran while OpenVINO's threads were still spinning on both cores (1.06-1.18x as long)
    steps = [chunks(1, context + done) for done in range(rounds + 1)]
    timers = {path: _stepper(call, steps) for path, call in calls.items()}
    return summarise(time_in_rounds(timers, rounds, shuffle_seed=batch), weight_bytes)


def _stepper(call, steps):
    """A timer that runs `call` on the next of `steps` each time."""
    left = iter(steps)
    return lambda: call(next(left))


def render(report: dict) -> str:
    lines = [
        f"talker {report['shape']}: {report['weight_bytes_per_step'] / 1e6:.0f} MB of INT8 weights per "
        f"decode step, {report['context']} positions cached, {report['threads']} threads; median ms per "
        "step, GB/s of weights, median ratio to plugin",
        "| batch | path | ms | GB/s | ratio |",
        "|---|---|---|---|---|",
    ]
    lines += table_rows(report["batches"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.native_talker", description=__doc__)
    parser.add_argument("--shape", default="0.6b", choices=("tiny", "tiny-1.7b", "0.6b", "1.7b"))
    parser.add_argument("--batch-sizes", default="1,8", help="sequences per step, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--context", type=int, default=64, help="positions prefilled before the decode steps")
    parser.add_argument("--threads", type=int, default=2, help="threads of the plugin and the native pool")
    parser.add_argument("--caches", default="u8", help="native KV caches to run, comma-separated: u8, f16")
    parser.add_argument(
        "--library", type=Path, action="append", default=[], help="another build beside main's (repeatable)"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--work-dir", type=Path, help="keep the random talker here, reuse it next time")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batch_sizes.split(",")]
    caches = tuple(args.caches.split(","))
    if not set(caches) <= {"u8", "f16"}:
        parser.error(f"--caches: u8 and / or f16, not {args.caches!r}")
    report = run(
        args.shape, batches, args.rounds, args.context, args.threads, args.work_dir, caches, args.library
    )
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
