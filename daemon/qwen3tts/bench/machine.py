"""This machine's physical limits, measured in the same run as the model: copy bandwidth and matmul peak.

Both are measured with the thread count the model uses, so "share of the limit" compares like with like.
The bandwidth is a STREAM-style copy (bytes read + bytes written, per second) of a buffer at least 4x the
last-level cache; the compute peak is a large MatMul with a constant weight (the FullyConnected path the
model's projections take) through OpenVINO, once per inference precision the CPU offers.
"""

from __future__ import annotations

import os
import resource
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MIN_COPY_BYTES = 256 << 20
MATMUL_SIZE = 2048  # M = K = N: 17 GFLOP per call, a few hundred ms on 2 cores


@dataclass(frozen=True)
class MachineLimits:
    """Measured limits; `peak_flops` maps f32 / bf16 / int8_weights to FLOP/s."""

    copy_bandwidth: float  # bytes/s, the best over thread counts
    copy_bandwidth_by_threads: dict[int, float]
    peak_flops: dict[str, float] = field(default_factory=dict)
    llc_bytes: int = 0
    copy_buffer_bytes: int = 0
    threads: int = 1


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


def copy_bandwidth(num_threads: int, num_bytes: int, repeats: int = 7) -> float:
    """Median bytes/s of copying `num_bytes` split over `num_threads` (numpy releases the GIL in copyto)."""
    src = np.ones(num_bytes // 8, dtype=np.float64)
    dst = np.zeros_like(src)
    bounds = np.linspace(0, src.size, num_threads + 1).astype(int)
    slices = [slice(bounds[i], bounds[i + 1]) for i in range(num_threads)]

    def copy_part(part: slice) -> None:
        np.copyto(dst[part], src[part])

    times = []
    for _ in range(repeats + 1):  # the first pass faults the pages in and is dropped
        workers = [threading.Thread(target=copy_part, args=(part,)) for part in slices]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        times.append(time.perf_counter() - started)
    return 2 * src.nbytes / statistics.median(times[1:])


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


def measure(num_threads: int) -> MachineLimits:
    llc = last_level_cache_bytes()
    buffer = max(MIN_COPY_BYTES, 4 * llc)
    by_threads = {n: copy_bandwidth(n, buffer) for n in sorted({1, num_threads})}
    peaks = {precision: matmul_peak(precision, num_threads) for precision in cpu_precisions()}
    peaks["int8_weights"] = matmul_peak("f32", num_threads, int8_weights=True)
    return MachineLimits(max(by_threads.values()), by_threads, peaks, llc, buffer, num_threads)


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
