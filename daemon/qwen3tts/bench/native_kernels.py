"""The native INT8 kernels against the CPU plugin's, on the code predictor's matrices, in one process.

One OpenVINO graph holds the 20 INT8_SYM MatMuls of five 0.6B code-predictor layers (q/k/v 4096x1024, o
1024x2048, gate/up 6144x1024, down 1024x3072: 79 MB of weights, ten times the last-level cache here),
each fed from the graph's input, so one inference streams every weight once, as one codebook step does.
It is compiled three times: as nncf wrote it (the plugin's FullyConnectedCompressed, with its default
properties and with DYNAMIC_QUANTIZATION_GROUP_SIZE 0, i.e. f32 activations where VNNI CPUs would
otherwise get int8 ones) and with the native op swapped in (runtime/native.py); round by round the tool
times the three and each kernel set through the library's C entry (no OpenVINO: what the op costs inside
the plugin shows as the difference), and the native streaming read of a buffer of the same size at the
same thread count as the ceiling (bench/read_limit.py: what the machine reads, not what numpy reaches).
Reported: median ms per pass, GB/s of weights, and the median per-round ratio to the plugin.

    python -m qwen3tts.bench.native_kernels --rows 1,2,8 --rounds 7 [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.bench import read_limit
from qwen3tts.bench.rounds import time_in_rounds
from qwen3tts.runtime.native import load_library, replace_int8_matmuls

LAYER = ((4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072))  # (N, K) of one layer's matrices
LAYERS = 5


def int8_matrices(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weights [N, K] i8, scale [N] f32) of LAYERS code-predictor layers."""
    rng = np.random.default_rng(seed)
    return [
        (rng.integers(-127, 128, shape, dtype=np.int8), (rng.random(shape[0], dtype=np.float32) + 0.5) / 127)
        for shape in LAYER * LAYERS
    ]


def compressed_graph(matrices, rows: int) -> ov.Model:
    """x_K [rows, K] -> one MatMul output per matrix, each in nncf's INT8_SYM pattern."""
    inputs = {
        k: ops.parameter([rows, k], np.float32, name=f"x{k}")
        for k in sorted({w.shape[1] for w, _ in matrices})
    }
    outputs = []
    for weights, scale in matrices:
        widened = ops.convert(ops.constant(weights), ov.Type.f16)
        scaled = ops.multiply(widened, ops.constant(scale.astype(np.float16).reshape(-1, 1)))
        outputs.append(ops.matmul(inputs[weights.shape[1]], ops.convert(scaled, ov.Type.f32), False, True))
    return ov.Model(outputs, list(inputs.values()), "int8_matmuls")


def run(rows_list: list[int], rounds: int, threads: int) -> dict:
    core = ov.Core()
    library = load_library(core=core)
    if library is None:
        raise SystemExit("native/build/libqwen3tts_native.so is not built (scripts/setup.sh)")
    matrices = int8_matrices()
    weight_bytes = sum(w.nbytes for w, _ in matrices)
    props = {
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": threads,
    }
    isas = [isa for isa in ("generic", "avx2", "avx_vnni", "avx512", "avx512_vnni") if library.supports(isa)]
    reader, unavailable = read_limit.load()
    if reader is None:
        raise SystemExit(unavailable)
    limit = reader.measure(weight_bytes, threads)
    report = {
        "weight_bytes": weight_bytes,
        "threads": threads,
        "isa": library.isa,
        "read_limit": dataclasses.asdict(limit),
        "read_limit_denominator": limit.describe(),
        "rows": {},
    }
    for rows in rows_list:
        rng = np.random.default_rng(rows)
        feeds = {f"x{k}": rng.standard_normal((rows, k)).astype(np.float32) for k in (1024, 2048, 3072)}
        plugin = core.compile_model(compressed_graph(matrices, rows), "CPU", props).create_infer_request()
        # the plugin's f32 activations: on VNNI CPUs its default quantizes them to int8 (group size 32)
        exact = {**props, "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
        plugin_f32 = core.compile_model(compressed_graph(matrices, rows), "CPU", exact).create_infer_request()
        model = compressed_graph(matrices, rows)
        replace_int8_matmuls(model, library)
        native = core.compile_model(model, "CPU", props).create_infer_request()
        timers = _timers(plugin, plugin_f32, native, library, matrices, feeds, isas, rows)
        samples = time_in_rounds(timers, rounds)
        report["rows"][rows] = {
            name: {
                "median_ms": 1e3 * statistics.median(values),
                "gb_per_s": weight_bytes / statistics.median(values) / 1e9,
                "share_of_read_limit": weight_bytes / statistics.median(values) / limit.bytes_per_s,
                "ratio_to_plugin": statistics.median(
                    v / p for v, p in zip(values, samples["plugin"], strict=True)
                ),
            }
            for name, values in samples.items()
        }
    return report


def _timers(plugin, plugin_f32, native, library, matrices, feeds, isas, rows) -> dict:
    """name -> a call that does one pass over every weight."""

    def kernels(isa: str):
        return lambda: [library.matmul_i8(feeds[f"x{w.shape[1]}"], w, s, isa) for w, s in matrices]

    timers = {
        "plugin": lambda: plugin.infer(feeds),
        "plugin, f32 activations": lambda: plugin_f32.infer(feeds),
        "native op": lambda: native.infer(feeds),
    }
    for isa in isas:
        if isa != "generic" or rows <= 2:  # the reference loop is slow: one look is enough
            timers[f"{isa} kernels"] = kernels(isa)
    return timers


def render(report: dict) -> str:
    lines = [
        f"{report['weight_bytes'] / 1e6:.0f} MB of INT8 weights per pass, {report['threads']} threads, "
        f"op kernels {report['isa']}; median ms per pass, GB/s of weights, their share of the read limit "
        f"{report['read_limit']['bytes_per_s'] / 1e9:.1f} GB/s ({report['read_limit_denominator']}), "
        "median per-round ratio to plugin",
        "| rows | variant | ms | GB/s | share of read limit | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for rows, variants in report["rows"].items():
        for name, v in variants.items():
            cells = (
                f"{v['median_ms']:.2f} | {v['gb_per_s']:.1f} | {100 * v['share_of_read_limit']:.0f} % "
                f"| x{v['ratio_to_plugin']:.2f}"
            )
            lines.append(f"| {rows} | {name} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.native_kernels", description=__doc__)
    parser.add_argument("--rows", default="1,2,8", help="rows of x (batch x positions), comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2, help="INFERENCE_NUM_THREADS of both graphs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = run([int(r) for r in args.rows.split(",")], args.rounds, args.threads)
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
