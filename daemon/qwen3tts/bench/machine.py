"""This machine's physical limits, measured in the same run as the model: read bandwidth and matmul peak.

Both are measured with the thread count the model uses, so "share of the limit" compares like with like.
The read bandwidth comes from the native streaming kernel (read_limit.py), once per stage over a buffer
of that stage's own weight footprint: weights that fit the last-level cache are judged against the
cache, the rest against DRAM. Without the native library there is no read figure (`read_unavailable`
says why) and no memory-bound share is computed. The compute peak is a large MatMul with a constant
weight (the FullyConnected path the model's projections take) through OpenVINO, once per inference
precision the CPU offers.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qwen3tts.bench import read_limit
from qwen3tts.bench.read_limit import ReadLimit

MATMUL_SIZE = 2048  # M = K = N: 17 GFLOP per call, a few hundred ms on 2 cores


@dataclass(frozen=True)
class MachineLimits:
    """Measured limits; `peak_flops` maps f32 / bf16 / int8_weights to FLOP/s; `read` maps a stage to the
    read bandwidth over a buffer of its weight footprint (empty, with `read_unavailable`, without the
    native library)."""

    read: dict[str, ReadLimit]
    peak_flops: dict[str, float] = field(default_factory=dict)
    llc_bytes: int = 0
    threads: int = 1
    read_unavailable: str | None = None


def last_level_cache_bytes() -> int:
    """The largest cache of cpu0 from sysfs (L3 on x86); 0 when sysfs does not say."""
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        value = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
        best = max(best, value)
    return best


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


def matmul_peak(
    precision: str, num_threads: int, size: int = MATMUL_SIZE, repeats: int = 5, int8_weights: bool = False
) -> float:
    """Median FLOP/s of an f32 [size, size] x constant [size, size] MatMul at INFERENCE_PRECISION_HINT.

    `int8_weights` stores the weight as nncf does (INT8_SYM: i8 -> Convert -> Multiply by a per-row
    scale), so the plugin takes its compressed-weight path (dynamic int8 activations where it can).
    """
    import openvino as ov
    import openvino.opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([size, size], ov.Type.f32, name="x")
    if int8_weights:
        quantized = ops.constant(rng.integers(-127, 128, (size, size), dtype=np.int8))
        scale = ops.constant(np.full((size, 1), 0.01, dtype=np.float32))
        weight = ops.multiply(ops.convert(quantized, "f32"), scale)
    else:
        weight = ops.constant(rng.standard_normal((size, size), dtype=np.float32))
    model = ov.Model([ops.matmul(x, weight, False, True)], [x], "matmul_peak")
    props = {
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": precision,
        "INFERENCE_NUM_THREADS": num_threads,
    }
    request = ov.Core().compile_model(model, "CPU", props).create_infer_request()
    feed = {"x": rng.standard_normal((size, size), dtype=np.float32)}
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        request.infer(feed)
        times.append(time.perf_counter() - started)
    return 2.0 * size**3 / statistics.median(times[1:])


def cpu_precisions() -> list[str]:
    """Inference precisions the CPU plugin can run natively: f32 always, bf16 where the ISA has it."""
    import openvino as ov

    capabilities = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return ["f32"] + (["bf16"] if "BF16" in capabilities else [])


def measure(num_threads: int, footprints: dict[str, int], library: Path | None = None) -> MachineLimits:
    """The limits at `num_threads`; `footprints` maps a stage to the weight bytes it reads (its buffer);
    `library`: the native library (default: native/build/ of this tree, as for the op)."""
    kernel, unavailable = read_limit.load(library)
    read = {}
    if kernel is not None:
        read = {stage: kernel.measure(max(1, size), num_threads) for stage, size in footprints.items()}
    peaks = {precision: matmul_peak(precision, num_threads) for precision in cpu_precisions()}
    peaks["int8_weights"] = matmul_peak("f32", num_threads, int8_weights=True)
    return MachineLimits(read, peaks, last_level_cache_bytes(), num_threads, unavailable)


def peak_rss_bytes() -> int:
    """Peak resident set of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"
