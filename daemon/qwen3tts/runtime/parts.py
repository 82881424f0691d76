"""Compiling the bundle's graphs onto the device plan: one function per kind of part.

The talker is read as the stateful IR and converted to PagedAttention here, at every start (a saved
PA IR does not load back in OpenVINO 2026.4). The code predictor and the codec chunk graphs are
plain static/dynamic graphs and may use the OpenVINO compile cache.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import openvino as ov

from qwen3tts.runtime.devices import Placement, compile_properties, place
from qwen3tts.settings import DeviceSettings

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

    def compile(
        self,
        component: str,
        model: ov.Model,
        preferences: Sequence[str],
        kv_cache_precision: str | None = None,
        cacheable: bool = True,
    ) -> tuple[ov.CompiledModel, Placement]:
        def try_compile(device: str) -> ov.CompiledModel:
            props = compile_properties(device, self.settings, kv_cache_precision)
            if cacheable and self.cache_dir is not None:
                props["CACHE_DIR"] = str(self.cache_dir)
            return self.core.compile_model(model, device, props)

        placement, compiled = place(component, preferences, self.available, try_compile)
        return compiled, placement

    def read(self, path: Path) -> ov.Model:
        return self.core.read_model(path)
