"""Compiling the bundle's graphs onto the device plan: one function per kind of part.

The talker is read as the stateful IR and converted to PagedAttention here, at every start (a saved
PA IR does not load back in OpenVINO 2026.4). The code predictor and the codec chunk graphs are
plain static/dynamic graphs and may use the OpenVINO compile cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import openvino as ov

from qwen3tts.runtime.devices import Placement, compile_properties, inference_precision, log_placement, place
from qwen3tts.settings import DeviceSettings

T = TypeVar("T")

log = logging.getLogger(__name__)


class PartCompiler:
    """Reads IR files and compiles them on the first device of a preference list that works."""

    def __init__(
        self,
        settings: DeviceSettings,
        cache_dir: Path | None = None,
        core: ov.Core | None = None,
        available: Sequence[str] | None = None,
    ):
        self.core = core or ov.Core()
        self.settings = settings
        self.cache_dir = cache_dir
        self.available = list(self.core.available_devices if available is None else available)
        self._capabilities: dict[str, tuple[str, ...]] = {}
        self._logged: dict[str, str] = {}  # component -> device its placement was logged for

    def compile(
        self,
        component: str,
        model: ov.Model,
        preferences: Sequence[str],
        kv_cache_precision: str | None = None,
        cacheable: bool = True,
    ) -> tuple[ov.CompiledModel, Placement]:
        def try_compile(device: str) -> ov.CompiledModel:
            capabilities = self.capabilities(device)
            props = compile_properties(device, self.settings, kv_cache_precision, component, capabilities)
            if cacheable and self.cache_dir is not None:
                props["CACHE_DIR"] = str(self.cache_dir)
            return self.core.compile_model(model, device, props)

        placement, compiled = place(component, preferences, self.available, try_compile)
        if self._logged.get(component) != placement.device:  # the codec compiles once per chunk size
            self._logged[component] = placement.device
            device = placement.device
            precision, why = inference_precision(component, device, self.settings, self.capabilities(device))
            log_placement(placement)
            log.info("%s: inference precision %s on %s (%s)", component, precision or "default", device, why)
        return compiled, placement

    def capabilities(self, device: str) -> tuple[str, ...]:
        """OPTIMIZATION_CAPABILITIES of `device` (FP32, BF16, INT8, ...); empty if the plugin cannot say."""
        if device not in self._capabilities:
            try:
                self._capabilities[device] = tuple(
                    self.core.get_property(device, "OPTIMIZATION_CAPABILITIES")
                )
            except RuntimeError:
                self._capabilities[device] = ()
        return self._capabilities[device]

    def warm_up(self, component: str, run: Callable[[], T]) -> T:
        """First inferences at load (graphs with dynamic shapes allocate and repack their weights then);
        returns what `run` returns. The caller logs (runtime/warm_up.settle on the CPU)."""
        return run()

    def build(self, component: str, make: Callable[[], T]) -> T:
        """A component the plugin does not compile (the fused native code predictor, the native talker),
        made by `make` from the model read last; returns what `make` returns. A hook like `compile`: the
        bench's RSS ledger (bench/memory.py) counts what the build maps and allocates for `component`."""
        return make()

    def read(self, path: Path) -> ov.Model:
        return self.core.read_model(path)
