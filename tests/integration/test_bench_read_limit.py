"""The native read kernel through its ctypes binding (bench/read_limit.py): every load width this CPU
runs gives a figure, bad arguments are refused, and a missing library is a stated reason, not a number.
Nothing here asserts how fast the machine is."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from qwen3tts.bench import read_limit
from qwen3tts.runtime.native import DEFAULT_LIBRARY


@pytest.fixture(scope="module")
def kernel() -> read_limit.ReadKernel:
    found, reason = read_limit.load()
    assert found is not None, reason
    return found


def test_the_widest_loads_are_chosen_and_every_set_this_cpu_runs_measures(kernel):
    widest = kernel.kernel()
    assert widest in ("avx512", "avx2", "generic")
    runnable = [isa for isa in ("avx512", "avx2", "generic") if kernel.kernel(isa) is not None]
    assert widest == runnable[0] and "generic" in runnable
    for isa in runnable:
        limit = kernel.measure(1 << 20, threads=2, passes=2, isa=isa)
        assert limit.kernel == isa and limit.threads == 2 and limit.passes == 2
        assert math.isfinite(limit.bytes_per_s) and limit.bytes_per_s > 0
        assert limit.buffer_bytes >= 1 << 20  # rounded up to whole blocks per thread
        assert isa in limit.describe() and "1.0 MB" in limit.describe()


def test_a_buffer_smaller_than_a_block_and_one_thread_still_measure(kernel):
    limit = kernel.measure(1, threads=1, passes=1)
    assert limit.buffer_bytes == 256 and limit.bytes_per_s > 0


def test_out_of_range_arguments_and_unknown_loads_are_refused(kernel):
    assert kernel.kernel("sse9") is None
    with pytest.raises(ValueError, match="sse9"):
        kernel.measure(1 << 20, threads=1, isa="sse9")
    for size, threads, passes in ((0, 1, 1), (1 << 20, 0, 1), (1 << 20, 1, 0)):
        with pytest.raises(ValueError, match="refused"):
            kernel.measure(size, threads, passes)


def test_a_missing_library_is_a_reason_and_no_figure(tmp_path):
    found, reason = read_limit.load(tmp_path / "libqwen3tts_native.so")
    assert found is None and "is not built" in reason and "no measured read limit" in reason


def test_the_command_prints_one_figure_per_buffer():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "qwen3tts.bench.read_limit",
            "--mb",
            "0.5,2",
            "--threads",
            "1",
            "--passes",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all("GB/s: native" in line for line in lines), result.stdout
    assert DEFAULT_LIBRARY.is_file()


@pytest.mark.slow
def test_the_kernel_table_judges_every_variant_against_the_read_limit():
    """bench/native_kernels.py: its ceiling is the native read over the same bytes, no longer numpy's."""
    result = subprocess.run(
        [sys.executable, "-m", "qwen3tts.bench.native_kernels", "--rows", "1", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "share of the read limit" in result.stdout and "read of a 78.6 MB buffer" in result.stdout
    rows = [line for line in result.stdout.splitlines() if line.startswith("| 1 |")]
    assert {"plugin", "native op"} <= {line.split("|")[2].strip() for line in rows}
    assert all(line.split("|")[5].strip().endswith("%") for line in rows)
    assert "numpy" not in result.stdout


def test_without_the_library_the_machine_has_no_read_limit_and_says_why(tmp_path):
    from qwen3tts.bench import machine

    missing = tmp_path / "libqwen3tts_native.so"
    limits = machine.measure(1, {"talker": 1 << 20, "code_predictor": 1 << 20}, missing)
    assert limits.read == {} and str(missing) in limits.read_unavailable
    assert limits.peak_flops["f32"] > 0  # the compute side is still measured
    found = machine.measure(1, {"talker": 1 << 20}, DEFAULT_LIBRARY)
    assert set(found.read) == {"talker"} and found.read_unavailable is None
    assert found.read["talker"].buffer_bytes >= 1 << 20 and found.read["talker"].threads == 1
