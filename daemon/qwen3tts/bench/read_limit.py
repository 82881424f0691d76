"""The read limit of a memory-bound stage, measured by a kernel that reaches it:
native/src/read_bandwidth.cpp.

A decode step streams its weights once; the fastest it can go is the rate at which this machine reads a
buffer of that size with the threads the model uses. The native kernel measures exactly that: each thread
streams its part of the buffer with the widest loads the CPU has, best of N passes. A buffer that fits
the last-level cache is read from it, a larger one from DRAM, so measuring over the stage's own
footprint picks the right level by itself. A numpy copy (read + write) or numpy's single-threaded read is
not a limit, and neither is the fastest figure our own code happened to reach: without the native library
there is no figure, and the report says so (`unavailable_reason`).

    python -m qwen3tts.bench.read_limit --mb 80,400 --threads 2
"""

from __future__ import annotations

import argparse
import ctypes
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.runtime.native import DEFAULT_LIBRARY

PASSES = 10


@dataclass(frozen=True)
class ReadLimit:
    """One measured read bandwidth: the denominator of a memory-bound stage's share of its limit."""

    bytes_per_s: float
    buffer_bytes: int
    threads: int
    kernel: str  # the loads used: "avx512", "avx2" or "generic"
    passes: int

    def describe(self) -> str:
        return (
            f"native {self.kernel} read of a {_size(self.buffer_bytes)} buffer, "
            f"{self.threads} threads, best of {self.passes}"
        )


def _size(num_bytes: int) -> str:
    return f"{num_bytes / 1e6:.1f} MB" if num_bytes >= 100_000 else f"{num_bytes / 1e3:.1f} kB"


class ReadKernel:
    """ctypes binding of the library's `qwen3tts_native_read_bandwidth` (no OpenVINO involved)."""

    def __init__(self, cdll: ctypes.CDLL):
        self._cdll = cdll
        cdll.qwen3tts_native_read_kernel.restype = ctypes.c_char_p
        cdll.qwen3tts_native_read_kernel.argtypes = [ctypes.c_char_p]
        cdll.qwen3tts_native_read_bandwidth.restype = ctypes.c_double
        cdll.qwen3tts_native_read_bandwidth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_int64,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_int64),
        ]

    def kernel(self, isa: str = "auto") -> str | None:
        """The loads `isa` names if this CPU runs them ("auto": the widest), else None."""
        name = self._cdll.qwen3tts_native_read_kernel(isa.encode())
        return name.decode() if name else None

    def measure(self, num_bytes: int, threads: int, passes: int = PASSES, isa: str = "auto") -> ReadLimit:
        kernel = self.kernel(isa)
        if kernel is None:
            raise ValueError(f"this CPU cannot run the read kernel {isa!r}")
        used = ctypes.c_int64(0)
        rate = self._cdll.qwen3tts_native_read_bandwidth(
            kernel.encode(), int(num_bytes), int(threads), int(passes), ctypes.byref(used)
        )
        if rate == -2:
            raise MemoryError(f"cannot allocate a {num_bytes / 1e6:.0f} MB read buffer")
        if rate <= 0:
            raise ValueError(f"read kernel refused {num_bytes} bytes, {threads} threads, {passes} passes")
        return ReadLimit(rate, used.value, threads, kernel, passes)


def load(path: Path | None = None) -> tuple[ReadKernel | None, str | None]:
    """(the kernel, None), or (None, why not) when the native library is not built or does not load."""
    path = Path(path) if path else DEFAULT_LIBRARY
    if not path.is_file():
        return None, f"{path} is not built (scripts/setup.sh builds it): no measured read limit"
    try:
        return ReadKernel(ctypes.CDLL(str(path))), None
    except (OSError, AttributeError) as exc:  # AttributeError: a library built before the read kernel
        return None, f"{path} has no usable read kernel ({exc}): rebuild native/ (scripts/setup.sh)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.read_limit", description=__doc__)
    parser.add_argument("--mb", default="8,80,400", help="buffer sizes in MB (10^6 bytes), comma-separated")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--passes", type=int, default=PASSES)
    parser.add_argument("--isa", default="auto", help="auto, avx512, avx2 or generic")
    args = parser.parse_args(argv)
    kernel, reason = load()
    if kernel is None:
        raise SystemExit(reason)
    for mb in (float(v) for v in args.mb.split(",")):
        limit = kernel.measure(int(mb * 1e6), args.threads, args.passes, args.isa)
        print(f"{limit.bytes_per_s / 1e9:.1f} GB/s: {limit.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
