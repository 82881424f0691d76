"""The device plan: which OpenVINO device runs which graph, decided once at start and logged.

Preference lists come from settings (talker GPU -> CPU; the code predictor follows the talker;
codec NPU -> GPU -> CPU). A device is tried only if OpenVINO lists it, and a compile failure on one
falls through to the next with the reason logged. Everything works on the CPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from qwen3tts.errors import DeviceError
from qwen3tts.model.codec_gate import MIN_SNR_DB
from qwen3tts.settings import DeviceSettings

log = logging.getLogger(__name__)

COMPONENTS = ("talker", "code_predictor", "codec")

# What `inference_precision: auto` means on a CPU, from measurements on an AVX-512 BF16 CPU
# (docs/benchmarks.md, docs/fidelity.md): the plugin's own default there is bf16, but the
# compressed-weight talker and code predictor run no faster with bf16 activations than with f32, and
# the codec decoded in bf16 keeps only ~19 dB SNR against its f32 decode (we require >= 35 dB). So auto
# is f32 on every CPU; bf16 stays available as an explicit setting. Faster codec graphs that pass the
# gate come as bundle variants with bf16 written into the graph (runtime/codec_variants.py).
CODEC_MIN_SNR_DB = MIN_SNR_DB
_BF16_DECLINED = {
    "codec": f"its whole-graph bf16 decode measured ~19 dB SNR against f32, below {CODEC_MIN_SNR_DB:.0f} dB",
    "talker": "bf16 activations measured no faster than f32 with compressed weights",
    "code_predictor": "bf16 activations measured no faster than f32 with compressed weights",
}


@dataclass(frozen=True)
class Placement:
    """Where one component runs and why."""

    component: str
    device: str
    skipped: tuple[str, ...] = ()  # "GPU: not present", "NPU: compile failed: ..."


@dataclass
class DevicePlan:
    """The chosen device of every component, for logs, `qwen3tts devices` and the MQTT status."""

    placements: dict[str, Placement] = field(default_factory=dict)
    codec_variant: str = "f32"  # which codec graphs of the bundle were loaded (runtime/codec_variants.py)
    native: dict[str, str] = field(default_factory=dict)  # component -> native kernel set (runtime/native.py)
    fused: dict[str, str] = field(default_factory=dict)  # component -> kernel set of its fused native path
    fused_up_to: dict[str, int] = field(default_factory=dict)  # component -> the largest batch it takes

    def device(self, component: str) -> str:
        return self.placements[component].device

    def summary(self) -> dict[str, str]:
        return {name: p.device for name, p in self.placements.items()}

    def decode_paths(self) -> dict[str, str]:
        """How each decode stage runs (the ready line, the status): "plugin" (the plugin's graph), "plugin+op
        <kernel set>" (the graph with its INT8 MatMuls on the native op) or "fused native <kernel set>" (with
        " up to batch N, plugin above" when the plugin's graph takes the larger batches)."""
        stages = ("talker", "code_predictor")
        return {name: self.decode_path(name) for name in stages if name in self.placements}

    def decode_path(self, component: str) -> str:
        if component in self.fused:
            return f"fused native {self.fused[component]}{self._above(component)}"
        if component in self.native:
            return f"plugin+op {self.native[component]}"
        return "plugin"

    def describe(self) -> str:
        lines = []
        for name, placement in self.placements.items():
            why = f" (skipped {'; '.join(placement.skipped)})" if placement.skipped else ""
            native = f", INT8 MatMuls on native {self.native[name]} kernels" if name in self.native else ""
            if name in self.fused:
                unit = "step" if name == "talker" else "frame"
                native = f", fused native {unit} on {self.fused[name]} kernels{self._above(name)}"
            lines.append(f"{name}: {placement.device}{native}{why}")
        return "\n".join(lines)

    def _above(self, component: str) -> str:
        up_to = self.fused_up_to.get(component)
        return "" if up_to is None else f" up to batch {up_to}, plugin above"


def base_device(name: str) -> str:
    """ "GPU.1" -> "GPU": preference lists may name a family or one device of it."""
    return name.split(".", 1)[0].upper()


def candidates(preferences: Sequence[str], available: Sequence[str]) -> tuple[list[str], list[str]]:
    """Devices to try in order, and the reasons the others were left out."""
    chosen, skipped = [], []
    for wanted in preferences:
        matches = [d for d in available if d.upper() == wanted.upper() or base_device(d) == wanted.upper()]
        if not matches:
            skipped.append(f"{wanted}: not present")
        for device in matches:
            if device not in chosen:
                chosen.append(device)
    return chosen, skipped


def inference_precision(
    component: str | None, device: str, settings: DeviceSettings, capabilities: Sequence[str] = ()
) -> tuple[str | None, str]:
    """(INFERENCE_PRECISION_HINT, or None for the device's default; the reason, for the log).

    `capabilities` is the device's OPTIMIZATION_CAPABILITIES (e.g. FP32, BF16, INT8 on a CPU).
    """
    if settings.inference_precision != "auto":
        return settings.inference_precision, "set in devices.inference_precision"
    if base_device(device) != "CPU":
        return None, f"the {base_device(device)} plugin's default"
    if "BF16" in capabilities:
        declined = _BF16_DECLINED.get(component or "", "bf16 is not measured for it")
        return "f32", f"the CPU offers bf16, but {declined}"
    return "f32", "the CPU has no bf16"


SMALL_DECODE_BYTES = 64 * 2**20
"""Talker and code predictor weights below this run on one CPU thread by default: a `qwen3tts tiny` bundle
has about 9 MB, a release (or a random checkpoint of release shapes) 600 MB and more."""


def threads_for(decode_weight_bytes: int, settings: DeviceSettings) -> DeviceSettings:
    """One CPU inference thread for a bundle whose talker and code predictor weights are small (a `qwen3tts
    tiny` one) unless num_threads names a number. Its graphs are too small to split: on two threads the
    second one only waits for the first, and took twice the CPU at the same speed (docs/benchmarks.md,
    "One thread for a tiny bundle"). Larger bundles keep 0: every core."""
    if decode_weight_bytes >= SMALL_DECODE_BYTES or settings.num_threads:
        return settings
    log.info("inference threads: 1 (a tiny bundle; devices.num_threads 0 is every core for a larger one)")
    return replace(settings, num_threads=1)


def compile_properties(
    device: str,
    settings: DeviceSettings,
    kv_cache_precision: str | None = None,
    component: str | None = None,
    capabilities: Sequence[str] = (),
) -> dict:
    """Compile properties for `device` from settings; CPU-only keys never reach GPU/NPU plugins."""
    props: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY"}
    precision, _ = inference_precision(component, device, settings, capabilities)
    if precision is not None:
        props["INFERENCE_PRECISION_HINT"] = precision
    if base_device(device) == "CPU":
        if settings.num_threads:
            props["INFERENCE_NUM_THREADS"] = settings.num_threads
        props["ENABLE_CPU_PINNING"] = settings.cpu_pinning
        if settings.inference_precision == "f32":
            # On CPUs with VNNI the plugin otherwise quantizes a compressed-weight MatMul's activations
            # to int8 per group of 32 (its default there): exact f32 arithmetic has to say no to that.
            props["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
    if kv_cache_precision and base_device(device) in ("CPU", "GPU"):
        props["KV_CACHE_PRECISION"] = kv_cache_precision
    return props


def place(
    component: str,
    preferences: Sequence[str],
    available: Sequence[str],
    try_compile: Callable[[str], Any],
) -> tuple[Placement, Any]:
    """Compile on the first preferred device that works; returns the placement and the compiled object."""
    order, skipped = candidates(preferences, available)
    for device in order:
        try:
            compiled = try_compile(device)
        except Exception as exc:  # a plugin can raise anything; the next device is the recovery
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            log.warning("%s: compiling on %s failed, trying the next device: %s", component, device, reason)
            skipped.append(f"{device}: compile failed: {reason}")
            continue
        return Placement(component, device, tuple(skipped)), compiled
    raise DeviceError(f"{component}: no device could compile it ({'; '.join(skipped) or 'no candidates'})")


def log_placement(placement: Placement) -> None:
    """One line per component: where it runs and why the devices before it were passed over."""
    skipped = f" (skipped {'; '.join(placement.skipped)})" if placement.skipped else ""
    log.info("%s runs on %s%s", placement.component, placement.device, skipped)


def preference_lists(settings: DeviceSettings) -> dict[str, tuple[str, ...]]:
    """The code predictor follows the talker: its per-frame hand-off of hidden states stays on one device."""
    return {"talker": settings.talker, "code_predictor": settings.talker, "codec": settings.codec}
