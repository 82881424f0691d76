"""Which graphs run the native kernels (runtime/native.py): a measured decision per CPU class.

`devices.native_kernels: auto` uses the op only for the components it measured faster than the CPU
plugin's own INT8 FullyConnected on the kernel set this CPU runs (MEASURED_FASTER, with the runs in
docs/benchmarks.md, "native/"); `always` uses it for both INT8 components wherever the library
loads; `never` does not. An explicit `devices.inference_precision: f32` asks for exact f32
arithmetic, which the op's int16 activations are not, so it turns the op off (docs/fidelity.md has
their drift). The op runs only on the CPU plugin: a component whose first device is another one
keeps its graph.

The code predictor can also run as one fused native frame (runtime/native_decode/: its 15 steps, heads
and sampler in one call) instead of a graph: `choose_fused_code_predictor`, by the same setting. Under
`auto` it takes the frame only at the batch sizes it measured faster on, per kernel set (FUSED_FASTER_UP_TO),
and the plugin's graph, compiled beside it, above them; when engine.max_num_seqs stays within that bound no
larger batch ever comes, and the graph (a compiled copy of the weights) is not made. The frame reads INT8
code-predictor weights and INT4_SYM ones in groups of 32, 64 or 128 (INT4_LABEL); the INT4 frame under
`auto` only where it measured faster than the plugin's INT4 graph (FUSED_INT4_FASTER_UP_TO). The talker's
step can run natively too (runtime/native_decode/talker.py): `choose_native_talker`, by
`devices.native_talker`; under `auto` only on a CPU class where it measured faster at every batch the
engine may run (NATIVE_TALKER_UP_TO).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.runtime.devices import base_device, candidates
from qwen3tts.settings import DeviceSettings

log = logging.getLogger(__name__)

COMPONENTS = ("talker", "code_predictor")

# Kernel set -> the components measured faster with it than with the plugin, 2 threads, batch 1.
# Only what was measured is here: a kernel set without an entry keeps the plugin under `auto`.
MEASURED_FASTER: dict[str, frozenset[str]] = {}

# (CPU vendor, kernel set) -> the largest batch at which the fused code-predictor frame measured faster than
# the plugin's graph, 2 threads (`python -m qwen3tts.bench.native_frame`, docs/benchmarks.md "Issue 34: the
# fused frame by batch size"). Why a limit: the frame's int16 activations (vpdpwssd) halve the multiply-adds
# per instruction of the plugin's int8 ones, so once a frame stops being bound by the weights' read (batch 3
# on a 2-vCPU Zen 4) the plugin wins. Why the vendor: the frame blocks its weight rows differently on AMD
# (native/src/predictor_frame.cpp), so an Intel AVX-512 VNNI CPU has its own entry, from its own runs.
# A CPU class without an entry keeps the graph under `auto`. AMD with AVX2 only (a 2-vCPU Zen 3, two runs):
# x0.65-0.71 of the plugin's time at batch 1, x0.73-0.78 at 4 and 8, x0.96 at 16. AMD with AVX-512 VNNI (a
# 2-vCPU Zen 4, two runs against the plugin compiled as the daemon compiles it, bench.native_frame's
# daemon_properties): x0.65 at batch 1, x0.77-0.78 at 2, x0.91-1.01 at 3, x1.01-1.05 at 4, x1.39 at 6.
# The same Zen 4 end to end (`qwen3tts bench`, 0.6B INT8 bundle, each path in its own process, three
# pairs, the native talker in both): the code predictor's ms per frame x0.87 at 3 (x0.80-0.88 pair by
# pair), x1.04 at 4 (x0.84-1.25: within the runs' noise), and up to 4 the plugin's graph is not compiled
# under the default engine.max_num_seqs: peak RSS 1554 against 1820-1831 MiB (docs/benchmarks.md, "the
# native talker at the default").
FUSED_FASTER_UP_TO: dict[tuple[str, str], int] = {
    ("AuthenticAMD", "avx512_vnni"): 4,
    ("AuthenticAMD", "avx2"): 8,
    # A 2-vCPU Intel Xeon (family 6 model 167, AVX-512 VNNI and AMX; the frame uses neither AMX nor
    # bf16), two runs: x0.52-0.55 at 1, x0.63-0.65 at 2, x0.75-0.76 at 3, x0.79-0.80 at 4, x1.01 at 6,
    # x1.13 at 8. Ice Lake (the same kernel set, no AMX) has not been measured with the frame.
    ("GenuineIntel", "avx512_vnni"): 4,
}

# The same for a code predictor in INT4_SYM weights, against the plugin's graph of the same INT4 weights
# (`python -m qwen3tts.bench.native_frame --weights int4_sym_g128`, docs/benchmarks.md "Issue 34: the INT4
# frame unpacked as it lies"). A 2-vCPU Zen 4, three runs against the plugin's INT4 graph compiled as the
# daemon compiles it: x0.66-0.67 of its time at batch 1, x0.87-0.89 at 2, x1.18-1.19 at 3; with the
# order shuffled every round (the bench ran the frame right after the plugin's threads had spun before)
# x0.67, 0.86, 0.97 and 1.13 at 1-4. End to end with the int4-cp bundle, `devices.native_kernels: always`
# (the frame at every batch) against this entry: the code predictor x1.13-1.19 at 3 and x1.29-1.37 at 4,
# the whole frame x1.09-1.11 at 4, but peak RSS 1476-1486 against 2702 MiB (the plugin's INT4 graph
# compiled beside the frame for batches 3-4): `always` is the setting for a box short of memory
# (docs/benchmarks.md, "The INT4 frame at three and four rows"). The AVX2 set's INT4 frame is about as
# fast (forced, on Zen 4), but the plugin's INT4 graph was never measured on an AVX2-only CPU: no entry
# for it yet.
FUSED_INT4_FASTER_UP_TO: dict[tuple[str, str], int] = {
    ("AuthenticAMD", "avx512_vnni"): 2,
}


# (CPU vendor, kernel set) -> the most sequences at which the native talker step measured as fast as the
# plugin's paged talker or faster, at every batch up to it, 2 threads (`python -m
# qwen3tts.bench.native_talker`, docs/benchmarks.md "The native talker step on this class"; on AVX-512
# VNNI end to end, `qwen3tts bench`). The talker cannot change path between batches as the code
# predictor does (its KV cache is the path's own), so `auto` takes it only where engine.max_num_seqs
# stays within this. AMD with AVX2 only (a 2-vCPU Zen 3):
# x0.76-0.79 at 1, x0.82 at 2; since its attention reads a block's rows of a KV head as one stream, x0.89
# at 4, x0.79-0.83 at 8, x0.87 at 12 and x1.07-1.12 at 16 (64 and 200 positions); end to end 0.85-0.89 of
# the wall time per frame at batch 1, peak RSS 1737 against 2107 MiB (no compiled copy of its weights).
# Its prefill is slower than the plugin's (0.7 of its speed from 45 positions on, docs/benchmarks.md).
NATIVE_TALKER_UP_TO: dict[tuple[str, str], int] = {
    ("AuthenticAMD", "avx2"): 8,
    # A 2-vCPU Zen 4. The step alone, interleaved with the plugin in one process (64 positions, the
    # daemon's properties): x0.74-0.83 at 1, x0.87-0.97 at 2, x0.98-1.10 at 3, x1.07-1.20 at 4 (it ran
    # right after the plugin's spinning threads; in a new order every round, with a decode row prefetched
    # 8 KiB ahead into L2: x0.71 at 1, x0.81 at 2, x1.00 at 4). End to end
    # (`qwen3tts bench`, the 0.6B INT8 bundle, each path in its own process, alternated), the talker's ms
    # per frame: x0.53-0.75 at 1 (three pairs), x0.79 at 2, x0.97 at 3, x0.89-1.00 at 4 (three pairs);
    # peak RSS 1822 against 2077-2107 MiB (no compiled copy of its weights); first audio +47-80 ms (its
    # prefill, int16 multiply-adds at their peak, against the plugin's int8 ones). By the daemon's own
    # measure as fast at every batch up to the default engine.max_num_seqs, and far faster at one.
    ("AuthenticAMD", "avx512_vnni"): 4,
    # A 2-vCPU Intel Xeon (family 6 model 167, AVX-512 VNNI and AMX), the step alone, three runs: x0.61-0.73
    # at 1, x0.65-0.75 at 2, x0.76-0.86 at 4, x0.89 at 6, x1.03 at 8. End to end (`qwen3tts bench`, 0.6B
    # INT8 bundle, alternated, with the fused frame): the talker's ms per frame x0.85-0.88 at 1, x1.01-1.04
    # at 4 (within the runs' noise), the whole frame x0.76-0.82 at 1 and x0.97-0.99 at 4; peak RSS 1515
    # against 1757-1780 MiB; first audio +66-74 ms (its prefill, as on Zen 4). Ice Lake: not measured.
    ("GenuineIntel", "avx512_vnni"): 4,
}


@functools.cache
def cpu_vendor() -> str:
    """This CPU's vendor_id (AuthenticAMD, GenuineIntel), or "unknown"."""
    try:
        return vendor_of(Path("/proc/cpuinfo").read_text())
    except OSError:
        return "unknown"


def vendor_of(cpuinfo: str) -> str:
    """The first vendor_id of a /proc/cpuinfo text, or "unknown"."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "vendor_id" and value.strip():
            return value.strip()
    return "unknown"


# Code-predictor weight labels (manifest precision, model/compression.py) whose INT4 matrices the frame's
# kernels read: INT4_SYM in groups of 32, 64 or 128, with nncf's fallback groups named in brackets (the
# tiny checkpoints' "int4_sym_g128 (g32 x 20)") and INT8 matrices of a mixed policy ("+heads8").
_GROUP = r"g(?:32|64|128)"
INT4_LABEL = re.compile(
    rf"int4_sym_{_GROUP}(?:\+(?:heads8|ends8|attn8))?(?: \({_GROUP} x \d+(?:, {_GROUP} x \d+)*\))?"
)


@dataclass(frozen=True)
class NativeChoice:
    components: frozenset[str]  # the graphs whose INT8 MatMuls get the op
    why: str  # one line for the log


def choose_native(
    settings: DeviceSettings,
    isa: str | None,
    preferences: dict[str, Sequence[str]],
    available: Sequence[str],
) -> NativeChoice:
    """What to rewrite, given the loaded library's kernel set (None: no library)."""
    if settings.native_kernels == "never":
        return NativeChoice(frozenset(), "devices.native_kernels is never")
    if settings.inference_precision == "f32":
        return NativeChoice(frozenset(), "devices.inference_precision f32 asks for exact f32 arithmetic")
    if isa is None:
        return NativeChoice(frozenset(), "the library is not built or does not load")
    on_cpu = {c for c in COMPONENTS if _first_device(preferences[c], available) == "CPU"}
    if settings.native_kernels == "always":
        wanted, reason = set(COMPONENTS), "devices.native_kernels is always"
    else:
        wanted = set(MEASURED_FASTER.get(isa, ()))
        reason = f"measured faster with the {isa} kernels" if wanted else f"not measured faster with {isa}"
    chosen = frozenset(wanted & on_cpu)
    if wanted - on_cpu:
        reason += f"; {', '.join(sorted(wanted - on_cpu))} would not run on the CPU"
    return NativeChoice(chosen, reason)


def _first_device(preferences: Sequence[str], available: Sequence[str]) -> str | None:
    order, _ = candidates(preferences, available)
    return base_device(order[0]) if order else None


@dataclass(frozen=True)
class FusedChoice:
    wanted: bool  # try the fused native path (it may still fall back)
    why: str  # one line for the log
    up_to: int | None = None  # the largest batch it takes, the plugin's graph above; None: every batch


def choose_fused_code_predictor(
    settings: DeviceSettings,
    isa: str | None,
    preferences: dict[str, Sequence[str]],
    available: Sequence[str],
    weights: str = "int8",
    max_num_seqs: int | None = None,
) -> FusedChoice:
    """Whether the code predictor runs as the fused native frame, given the library's kernel set and the
    bundle's code-predictor weights (manifest precision: int8, int4_sym_g128 ..., f16, f32); with
    `max_num_seqs` (engine.max_num_seqs), a batch bound it stays within takes every batch (up_to None)."""
    if settings.native_kernels == "never":
        return FusedChoice(False, "devices.native_kernels is never")
    if settings.inference_precision == "f32":
        return FusedChoice(False, "devices.inference_precision f32 asks for exact f32 arithmetic")
    int4 = INT4_LABEL.fullmatch(weights) is not None
    if weights != "int8" and not int4:  # matrices the frame cannot read: nothing to try or warn about
        readable = "INT8 or INT4_SYM in groups of 32 to 128"
        return FusedChoice(False, f"the bundle's code predictor weights are {weights}, not {readable}")
    if isa is None:
        return FusedChoice(False, "the native library is not built or does not load")
    if _first_device(preferences["code_predictor"], available) != "CPU":
        return FusedChoice(False, "the code predictor does not run on the CPU")
    if isa == "generic":
        return FusedChoice(False, "this CPU has no AVX2")
    if settings.native_kernels == "always":
        return FusedChoice(True, "devices.native_kernels is always")
    vendor = cpu_vendor()
    up_to = (FUSED_INT4_FASTER_UP_TO if int4 else FUSED_FASTER_UP_TO).get((vendor, isa))
    if up_to is None:
        where = f"with the {isa} kernels on {vendor}"
        if int4:
            return FusedChoice(False, f"the INT4 frame is not measured faster {where} (always takes it)")
        return FusedChoice(False, f"not measured faster {where}")
    why = f"measured faster with the {isa} kernels on {vendor} up to batch {up_to}"
    why += " with INT4 weights" if int4 else ""
    if max_num_seqs is not None and max_num_seqs <= up_to:  # no batch above it: no plugin graph to keep
        return FusedChoice(True, f"{why}, and engine.max_num_seqs {max_num_seqs} stays within it")
    return FusedChoice(True, why, up_to)


def choose_native_talker(
    settings: DeviceSettings,
    isa: str | None,
    preferences: dict[str, Sequence[str]],
    available: Sequence[str],
    max_num_seqs: int,
    weights: str = "int8",
) -> FusedChoice:
    """Whether the talker's step runs natively (`devices.native_talker`; `auto`: NATIVE_TALKER_UP_TO), given
    the bundle's talker weights (manifest precision): `auto` only tries INT8 ones, the only ones it reads."""
    if settings.native_talker == "never":
        return FusedChoice(False, "devices.native_talker is never")
    if settings.inference_precision == "f32":
        return FusedChoice(False, "devices.inference_precision f32 asks for exact f32 arithmetic")
    if isa is None:
        return FusedChoice(False, "the native library is not built or does not load")
    if _first_device(preferences["talker"], available) != "CPU":
        return FusedChoice(False, "the talker does not run on the CPU")
    if isa == "generic":
        return FusedChoice(False, "this CPU has no AVX2")
    if settings.native_talker == "always":
        return FusedChoice(True, "devices.native_talker is always")
    if settings.native_kernels == "never":
        return FusedChoice(False, "devices.native_kernels is never")
    if weights != "int8":
        return FusedChoice(False, f"the bundle's talker weights are {weights}, not INT8")
    vendor = cpu_vendor()
    up_to = NATIVE_TALKER_UP_TO.get((vendor, isa))
    if up_to is None:
        return FusedChoice(False, f"not measured faster with the {isa} kernels on {vendor}")
    if max_num_seqs > up_to:
        why = f"engine.max_num_seqs {max_num_seqs} is above the {up_to} it measured faster up to"
        return FusedChoice(False, f"{why} with the {isa} kernels on {vendor}")
    return FusedChoice(True, f"measured faster with the {isa} kernels on {vendor} up to {up_to} sequences")
