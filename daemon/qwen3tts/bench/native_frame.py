"""The fused native code-predictor frame (runtime/native_decode/) against the CPU plugin's graph, one process.

A random code predictor of the real shape (`--shape 0.6b`, the release's 5 layers, 15 heads and tables)
is built with the bundle builder's graph (model/graphs/code_predictor.py) and INT8_SYM compression, saved
and read back as a bundle's IR is; the plugin runs it as the daemon does (the daemon's compile properties,
daemon_properties; and with exact f32 activations), the native predictor reads the same mapped tensors.
Round by round each does one frame (15 steps, greedy and sampled rows alike: temperature 0.9, top-k 50) at
each batch size, in a new order every round. Reported: median ms per frame, GB/s of weights read per frame
(each step reads the five layers and its own head), and the median per-round ratio to the plugin.

    python -m qwen3tts.bench.native_frame --shape 0.6b --batch-sizes 1,8 --rounds 7 [--threads 2]
        [--json out] [--work-dir dir]
"""

from __future__ import annotations

import argparse
import ctypes
import tempfile
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.bench.rounds import emit, summarise, table_rows, time_in_rounds
from qwen3tts.model.checkpoint import read_json
from qwen3tts.model.compression import save_graph
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.model.spec_parse import parse_model_spec
from qwen3tts.model.tensor_layout import code_predictor_tensor_shapes
from qwen3tts.model.tiny import write_checkpoint
from qwen3tts.runtime.devices import compile_properties
from qwen3tts.runtime.native import DEFAULT_LIBRARY
from qwen3tts.runtime.native_decode.predictor import NativeCodePredictor, declare
from qwen3tts.runtime.native_decode.tensors import read_tensors
from qwen3tts.settings import DeviceSettings


def random_predictor(shape: str, out: Path, seed: int = 0, precision: str = "int8"):
    """(spec, path of the saved code-predictor IR, compressed as `precision`) of a random checkpoint of
    `shape`; an IR that a previous run left in `out` is reused."""
    root = out / "checkpoint"
    if not (root / "config.json").is_file():
        write_checkpoint(root, shape=shape, seed=seed, configs_only=True)
    spec = parse_model_spec(
        read_json(root / "config.json"),
        read_json(root / "generation_config.json"),
        read_json(root / "speech_tokenizer" / "config.json"),
    )
    path = out / ("code_predictor.xml" if precision == "int8" else f"code_predictor-{precision}.xml")
    if path.is_file():
        return spec, path
    rng = np.random.default_rng(seed)
    shapes = code_predictor_tensor_shapes(spec.code_predictor)
    shapes[cp.TALKER_CODEC_EMBEDDING] = (spec.talker.vocab_size, spec.talker.hidden_size)
    weights = {}
    for name, dims in shapes.items():
        if name.endswith("norm.weight"):
            weights[name] = (1.0 + 0.1 * rng.standard_normal(dims)).astype(np.float32)
        else:
            weights[name] = (0.02 * rng.standard_normal(dims, dtype=np.float32)).astype(np.float32)
    model = cp.build_code_predictor(spec.code_predictor, spec.talker.hidden_size, weights)
    save_graph(model, path, precision)
    return spec, path


def daemon_properties(core: ov.Core, component: str, threads: int, kv_cache: str | None = None) -> dict:
    """The compile properties the daemon gives `component` on this CPU (runtime/devices.py), at `threads`:
    the plugin's row is what the daemon would run. Without them a CPU with bf16 compiled its default, bf16
    activations, where the daemon asks for f32 (with the int8-activation kernels of VNNI CPUs)."""
    capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    settings = DeviceSettings(num_threads=threads)
    return compile_properties("CPU", settings, kv_cache, component, capabilities)


def frame_bytes(tensors) -> int:
    """INT8 / packed INT4 weight bytes one frame reads: every layer matrix once per step, each step's own
    head (an INT4 matrix's group scales, 1/64 of its bytes, are not counted)."""
    per_step = sum(w.data.nbytes for layer in tensors.layers for w in layer.values())
    steps = len(tensors.heads)
    projection = tensors.projection.data.nbytes if tensors.projection is not None else 0
    return steps * (per_step + projection) + sum(h.data.nbytes for h in tensors.heads)


def run(
    shape: str, batches: list[int], rounds: int, threads: int, work_dir: Path | None = None, weights="int8"
) -> dict:
    with tempfile.TemporaryDirectory(prefix="native-frame-") as tmp:
        spec, path = random_predictor(shape, work_dir or Path(tmp), precision=weights)
        core = ov.Core()
        model = core.read_model(str(path))
        tensors = read_tensors(model, spec.code_predictor)
        cdll = ctypes.CDLL(str(DEFAULT_LIBRARY))
        if not declare(cdll):
            raise SystemExit(f"{DEFAULT_LIBRARY} has no fused code predictor (rebuild native/)")
        isa = cdll.qwen3tts_native_isa().decode() if _declare_isa(cdll) else "generic"
        native = NativeCodePredictor.build(cdll, spec.code_predictor, tensors, isa, threads, keep=(model,))
        props = daemon_properties(core, "code_predictor", threads)
        plugin = core.compile_model(model, "CPU", props).create_infer_request()
        exact = {**props, "INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
        plugin_f32 = core.compile_model(model, "CPU", exact).create_infer_request()
        weight_bytes = frame_bytes(tensors)
        report = {"shape": shape, "weights": weights, "threads": threads, "isa": isa}
        report["weight_bytes_per_frame"] = weight_bytes
        report["batches"] = {
            batch: _time_batch(spec, batch, rounds, plugin, plugin_f32, native, weight_bytes)
            for batch in batches
        }
        native.close()
        return report


def _declare_isa(cdll) -> bool:
    cdll.qwen3tts_native_isa.restype = ctypes.c_char_p
    return True


def _time_batch(spec, batch, rounds, plugin, plugin_f32, native, weight_bytes) -> dict:
    rng = np.random.default_rng(batch)
    vocab = spec.code_predictor.vocab_size
    feeds = {
        cp.PAST_HIDDEN: rng.standard_normal((batch, spec.talker.hidden_size)).astype(np.float32),
        cp.CODE0: rng.integers(0, vocab, batch),
        cp.NOISE: rng.random((batch, spec.code_predictor.num_code_groups - 1, vocab), dtype=np.float32),
        cp.TEMPERATURE: np.where(np.arange(batch) % 2 == 0, 0.0, 0.9).astype(np.float32),
        cp.TOP_K: np.full(batch, 50, np.int64),
        cp.TOP_P: np.ones(batch, np.float32),
    }
    timers = {
        "plugin": lambda: plugin.infer(feeds),
        "plugin, f32 activations": lambda: plugin_f32.infer(feeds),
        f"native frame ({native.isa}, {native.threads} threads)": lambda: native.frame(*feeds.values()),
    }
    # a new order every round: the native frame always ran right after the plugin's f32 graph, whose
    # threads were still spinning on both cores (the talker step took 1.06-1.18x as long so, 2abe2fd)
    samples = time_in_rounds(timers, rounds, shuffle_seed=batch)
    return summarise(samples, weight_bytes)


def render(report: dict) -> str:
    lines = [
        f"code predictor {report['shape']}: {report['weight_bytes_per_frame'] / 1e6:.0f} MB of "
        f"{report.get('weights', 'int8').upper()} "
        f"weights per frame, {report['threads']} threads; median ms per frame, GB/s of weights, "
        "median ratio to plugin",
        "| batch | path | ms | GB/s | ratio |",
        "|---|---|---|---|---|",
    ]
    lines += table_rows(report["batches"])
    return "\n".join(lines)


def add_frame_arguments(parser: argparse.ArgumentParser, batch_sizes: str, rounds: int) -> None:
    """The arguments of every frame benchmark (this one, native_variants.py)."""
    parser.add_argument("--shape", default="0.6b", choices=("tiny", "tiny-1.7b", "0.6b", "1.7b"))
    parser.add_argument("--batch-sizes", default=batch_sizes, help="rows per frame, comma-separated")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--threads", type=int, default=2, help="threads of the plugin and the native pool")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--work-dir", type=Path, help="keep the random predictor here, reuse it next time")
    parser.add_argument("--weights", default="int8", choices=("int8", "int4_sym_g128"), help="compression")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.native_frame", description=__doc__)
    add_frame_arguments(parser, batch_sizes="1,8", rounds=7)
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batch_sizes.split(",")]
    report = run(args.shape, batches, args.rounds, args.threads, args.work_dir, args.weights)
    return emit(render(report), report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
