"""Which graphs run the native kernels (runtime/native.py): a measured decision per CPU class.

`devices.native_kernels: auto` uses the op only for the components it measured faster than the CPU
plugin's own INT8 FullyConnected on the kernel set this CPU runs (MEASURED_FASTER, with the runs in
docs/benchmarks.md, "native/"); `always` uses it for both INT8 components wherever the library
loads; `never` does not. An explicit `devices.inference_precision: f32` asks for exact f32
arithmetic, which the op's int16 activations are not, so it turns the op off (docs/fidelity.md has
their drift). The op runs only on the CPU plugin: a component whose first device is another one
keeps its graph.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from qwen3tts.runtime.devices import base_device, candidates
from qwen3tts.settings import DeviceSettings

log = logging.getLogger(__name__)

COMPONENTS = ("talker", "code_predictor")

# Kernel set -> the components measured faster with it than with the plugin, 2 threads, batch 1.
# Only what was measured is here: a kernel set without an entry keeps the plugin under `auto`.
MEASURED_FASTER: dict[str, frozenset[str]] = {}


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
