"""Seeing inside the compiled graphs: which precision each runs at, and (with --profile) where time goes.

`RecordingCompiler` is the runtime's PartCompiler plus a ledger: it hands the loader proxies of the
compiled models that remember every infer request created from them, so the bench can ask the
requests for OpenVINO's per-op counters without touching runtime/ code. `PERF_COUNT` is switched on
through the core, so it reaches every compile; it slows inference a little, so profiled runs say so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import openvino as ov

from qwen3tts.runtime.parts import PartCompiler


class _RecordedModel:
    """A CompiledModel that records the infer requests made from it; everything else is delegated."""

    def __init__(self, compiled: ov.CompiledModel, requests: list[ov.InferRequest]):
        self._compiled = compiled
        self._requests = requests

    def create_infer_request(self) -> ov.InferRequest:
        request = self._compiled.create_infer_request()
        self._requests.append(request)
        return request

    def __getattr__(self, name: str):
        return getattr(self._compiled, name)


@dataclass
class CompiledPart:
    component: str
    compiled: ov.CompiledModel
    requests: list[ov.InferRequest] = field(default_factory=list)

    @property
    def inference_precision(self) -> str:
        return self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()


class RecordingCompiler(PartCompiler):
    def __init__(self, *args, profile: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.parts: list[CompiledPart] = []
        if profile:
            self.core.set_property("CPU", {"PERF_COUNT": True})

    def compile(self, component, model, preferences, kv_cache_precision=None, cacheable=True):
        compiled, placement = super().compile(component, model, preferences, kv_cache_precision, cacheable)
        part = CompiledPart(component, compiled)
        self.parts.append(part)
        return _RecordedModel(compiled, part.requests), placement

    def precision(self, component: str) -> str | None:
        """The inference precision `component` was compiled with; None if never compiled (a native path)."""
        return next((p.inference_precision for p in self.parts if p.component == component), None)

    def kv_cache_precision(self) -> str:
        """Element type of the talker's compiled key cache (u8, f16, bf16, f32); "f16" for the native
        talker, which compiles no graph and keeps its own f16 paged cache (native/src/talker.hpp)."""
        talker = next((p for p in self.parts if p.component == "talker"), None)
        if talker is None:
            return "f16"
        port = next(i for i in talker.compiled.inputs if i.get_any_name().startswith("key_cache."))
        return port.get_element_type().get_type_name()


@dataclass(frozen=True)
class OpTime:
    name: str
    kind: str  # node type as executed (e.g. FullyConnected, PagedAttentionExtension)
    exec_type: str  # kernel implementation (e.g. brgemm_avx512_f32)
    ms: float
    share: float  # of this graph's profiled time


def top_operations(compiler: RecordingCompiler, count: int = 10) -> dict[str, list[OpTime]]:
    """Per graph (component; chunk size for the codec): the ops that took longest in its last inference."""
    tables: dict[str, list[OpTime]] = {}
    for part in compiler.parts:
        for index, request in enumerate(part.requests):
            label = part.component if len(part.requests) == 1 else f"{part.component}[{index}]"
            if part.component == "codec":
                label = _codec_label(part.compiled)
            info = request.get_profiling_info()
            ops = [i for i in info if i.real_time.total_seconds() > 0]
            total = sum(i.real_time.total_seconds() for i in ops) or 1.0
            by_name: dict[tuple, float] = defaultdict(float)
            for item in ops:
                by_name[(item.node_name, item.node_type, item.exec_type)] += item.real_time.total_seconds()
            ranked = sorted(by_name.items(), key=lambda kv: kv[1], reverse=True)[:count]
            tables[label] = [OpTime(n, k, e, s * 1e3, s / total) for (n, k, e), s in ranked]
            tables[f"{label}, by op type"] = _by_type(by_name, total, count)
    return tables


def _codec_label(compiled) -> str:
    """Which codec graph: a whole chunk graph (older bundles), the frame part or a sample part."""
    inputs = {port.get_any_name() for port in compiled.inputs}
    if "codes" not in inputs:
        return f"codec sample part ({compiled.output('audio').get_partial_shape()[1]} samples)"
    frames = compiled.input("codes").get_partial_shape()[1]
    return f"codec chunk {frames}" if frames.is_static else "codec frame part"


def _by_type(by_name: dict[tuple, float], total: float, count: int) -> list[OpTime]:
    """Summed over all ops of one type and kernel: where a graph's time goes when no single op stands out."""
    by_kind: dict[tuple, float] = defaultdict(float)
    instances: dict[tuple, int] = defaultdict(int)
    for (_, kind, exec_type), seconds in by_name.items():
        by_kind[(kind, exec_type)] += seconds
        instances[(kind, exec_type)] += 1
    ranked = sorted(by_kind.items(), key=lambda kv: kv[1], reverse=True)[:count]
    return [OpTime(f"{instances[key]} ops", key[0], key[1], s * 1e3, s / total) for key, s in ranked]
