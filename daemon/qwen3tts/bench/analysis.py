"""From timed steps to the reported numbers: per-stage time per frame, real-time factor, throughput,
and the share of each stage's physical limit reached (roofline: the larger of bytes / read bandwidth and
FLOPs / matmul peak, both measured in the same run; the read bandwidth by the native kernel over a buffer
of the stage's own footprint, machine.py). Each stage's figures name their denominator. Without a
measured read bandwidth a memory-bound stage gets no share at all: its `denominator` says why.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.bench.graph_cost import GraphCost, attention_flops, codec_chunk_costs, read_graph_cost
from qwen3tts.bench.machine import MachineLimits
from qwen3tts.bench.read_limit import ReadLimit
from qwen3tts.bench.workload import FRAME_SECONDS, BatchRun, StepRecord
from qwen3tts.model import bundle as layout

COMPUTE_BOUND_STAGES = ("codec",)  # the decode stages stream their weights; the codec computes


@dataclass(frozen=True)
class BundleCosts:
    """Per-inference costs of the bundle's graphs and what each stage's compute peak is."""

    talker: GraphCost
    code_predictor: GraphCost
    codec: dict[int, GraphCost]  # by chunk size (frames)
    kv_bytes_per_token: float  # one sequence, all layers, compiled cache precision
    num_heads: int
    head_dim: int
    num_layers: int
    peak_kind: dict[str, str]  # stage -> key of MachineLimits.peak_flops

    def footprints(self) -> dict[str, int]:
        """Stage -> the distinct weight bytes one call reads: the buffer its read limit is measured over."""
        return {
            "talker": self.talker.weight_bytes_footprint,
            "code_predictor": self.code_predictor.weight_bytes_footprint,
            "codec": max(cost.weight_bytes_footprint for cost in self.codec.values()),
        }

    def codec_chunk(self, frames: int) -> int:
        """The compiled chunk a codec call of `frames` frames runs (the last, padded one included)."""
        sizes = sorted(self.codec)
        return frames if frames in self.codec else next((s for s in sizes if s >= frames), sizes[-1])


def bundle_costs(
    bundle_dir: Path, manifest: layout.Manifest, kv_bytes_per_token: float, peak_kind: dict[str, str]
) -> BundleCosts:
    talker = manifest.spec.talker
    return BundleCosts(
        talker=read_graph_cost(bundle_dir / layout.TALKER_XML),
        code_predictor=read_graph_cost(bundle_dir / layout.CODE_PREDICTOR_XML),
        codec=codec_chunk_costs(bundle_dir, manifest),
        kv_bytes_per_token=kv_bytes_per_token,
        num_heads=talker.num_attention_heads,
        head_dim=talker.head_dim,
        num_layers=talker.num_hidden_layers,
        peak_kind=peak_kind,
    )


@dataclass
class Roofline:
    """Summed over the measured steps of one stage, against the stage's limits (`read`: None when the
    read bandwidth could not be measured; `read_unavailable` then says why)."""

    read: ReadLimit | None
    peak_flops: float
    peak_kind: str
    read_unavailable: str | None = None
    compute_bound: bool = False  # by design (the codec): judged against the peak even without a read figure
    measured: float = 0.0  # s
    bytes: float = 0.0  # weights and KV cache
    weight_bytes: float = 0.0
    flops: float = 0.0
    frames: int = 0  # frames generated in the measured steps (the codec's cost is spread over them)

    def add(self, measured: float, weight_bytes: float, other_bytes: float, flops: float) -> None:
        self.measured += measured
        self.weight_bytes += weight_bytes
        self.bytes += weight_bytes + other_bytes
        self.flops += flops

    def as_dict(self) -> dict:
        frames = self.frames or 1
        compute = self.flops / self.peak_flops
        memory = self.bytes / self.read.bytes_per_s if self.read is not None else None
        if memory is None:  # only the compute side is known: a memory-bound stage gets no share
            bound = "compute" if self.compute_bound else None
        else:
            bound = "memory" if memory >= compute else "compute"
        limit = {"memory": memory, "compute": compute, None: None}[bound]
        seconds = self.measured or float("inf")
        return {
            "bytes_per_frame": self.bytes / frames,
            "weight_bytes_per_frame": self.weight_bytes / frames,
            "flops_per_frame": self.flops / frames,
            "weight_gb_per_s": self.weight_bytes / seconds / 1e9,
            "read_gb_per_s": self.bytes / seconds / 1e9,
            "read_limit_gb_per_s": self.read.bytes_per_s / 1e9 if self.read is not None else None,
            # the decode stages' figure of merit: how close their reads come to the read limit, whatever
            # the roofline's bound (a loaded machine's matmul peak can make a decode stage look compute-bound)
            "share_of_read_limit": memory / self.measured if memory is not None and self.measured else None,
            "peak_gflop_per_s": self.peak_flops / 1e9,
            "bound": bound,
            "denominator": self._denominator(bound),
            "limit_ms_per_frame": 1e3 * limit / frames if limit is not None else None,
            "measured_ms_per_frame": 1e3 * self.measured / frames,
            "share_of_limit": limit / self.measured if limit is not None and self.measured else None,
        }

    def _denominator(self, bound: str | None) -> str:
        if bound == "memory":
            return self.read.describe()
        if bound == "compute":
            return f"measured {self.peak_kind} matmul peak {self.peak_flops / 1e9:.0f} GFLOP/s"
        return self.read_unavailable or "no measured read bandwidth"


def rooflines(steps: list[StepRecord], costs: BundleCosts, machine: MachineLimits) -> dict[str, Roofline]:
    kinds = costs.peak_kind
    lines = {
        stage: Roofline(
            machine.read.get(stage),
            machine.peak_flops[kinds[stage]],
            kinds[stage],
            machine.read_unavailable,
            compute_bound=stage in COMPUTE_BOUND_STAGES,
        )
        for stage in ("talker", "code_predictor", "codec")
    }
    for step in steps:
        for call in step.calls:
            if call.stage == "talker":
                kv = sum(call.contexts) * costs.kv_bytes_per_token
                attention = sum(
                    attention_flops(costs.num_heads, costs.head_dim, costs.num_layers, c)
                    for c in call.contexts
                )
                lines["talker"].add(
                    call.seconds,
                    costs.talker.weight_bytes_read,
                    kv,
                    call.tokens * costs.talker.flops + attention,
                )
            elif call.stage == "code_predictor":
                cost = costs.code_predictor
                lines["code_predictor"].add(call.seconds, cost.weight_bytes_read, 0, call.rows * cost.flops)
            else:
                cost = costs.codec[costs.codec_chunk(call.tokens)]
                lines["codec"].add(call.seconds, cost.weight_bytes_read, 0, cost.flops)
    generated = sum(step.frames for step in steps)
    for line in lines.values():
        line.frames = generated
    return lines


def summarize_run(run: BatchRun, costs: BundleCosts, machine: MachineLimits) -> dict:
    """The numbers of one batch run over its steady decode steps (prefill and warm-up left out).

    Every per-frame figure is a mean over the same steps and the same generated frames, so
    talker + code predictor + codec + host = total exactly; the codec's chunk calls are spread over
    the frames generated meanwhile (a 12-frame chunk runs once every 12 steps).
    """
    steps = run.decode_steps
    if not steps:
        return {"batch": run.batch, "repeat": run.repeat, "e2e_s": run.e2e_seconds, "decode_steps": 0}
    mean_step = statistics.fmean(s.wall for s in steps)
    frames = sum(s.frames for s in steps)
    lines = rooflines(steps, costs, machine)
    per_frame = {
        stage: 1e3 * lines[stage].measured / frames for stage in ("talker", "code_predictor", "codec")
    }
    per_frame["host"] = 1e3 * sum(s.host for s in steps) / frames
    per_frame["total"] = 1e3 * sum(s.wall for s in steps) / frames
    return {
        "batch": run.batch,
        "repeat": run.repeat,
        "decode_steps": len(steps),
        "e2e_s": run.e2e_seconds,
        "step_ms": 1e3 * mean_step,
        "per_frame_ms": per_frame,
        "host_share": sum(s.host for s in steps) / sum(s.wall for s in steps),
        "rtf_per_stream": mean_step / FRAME_SECONDS,
        "frames_per_s": run.batch / mean_step,
        "x_real_time": run.batch / mean_step * FRAME_SECONDS,
        "e2e_frames_per_s": run.batch * _frames_per_stream(run) / run.e2e_seconds,
        "limits": {stage: line.as_dict() for stage, line in lines.items()},
    }


def _frames_per_stream(run: BatchRun) -> int:
    return sum(s.frames for s in run.steps) // run.batch


def median_summary(runs: list[dict]) -> dict:
    """The repeat with the median total time per frame, whole: element-wise medians of the stages
    would no longer add up to the total, nor match the roofline table's figures."""
    timed = sorted((r for r in runs if r.get("decode_steps")), key=lambda r: r["per_frame_ms"]["total"])
    if not timed:
        return _elementwise_median(runs)
    median_run = dict(timed[(len(timed) - 1) // 2])
    median_run.pop("repeat", None)
    return median_run


def _elementwise_median(runs: list[dict]) -> dict:
    """Element-wise median of repeated run summaries (numbers only; nested dicts recursively)."""
    first = runs[0]
    merged: dict = {}
    for key, value in first.items():
        if isinstance(value, dict):
            merged[key] = _elementwise_median([r[key] for r in runs])
        elif isinstance(value, int | float) and not isinstance(value, bool) and key not in ("batch",):
            merged[key] = statistics.median(r[key] for r in runs)
        else:
            merged[key] = value
    merged.pop("repeat", None)
    return merged
