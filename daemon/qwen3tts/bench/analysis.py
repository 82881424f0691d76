"""From timed steps to the reported numbers: per-stage time per frame, real-time factor, throughput,
and the share of each stage's physical limit reached (roofline: the larger of bytes / copy bandwidth
and FLOPs / matmul peak, both measured in the same run).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.bench.graph_cost import GraphCost, attention_flops, codec_chunk_costs, read_graph_cost
from qwen3tts.bench.machine import MachineLimits
from qwen3tts.bench.workload import FRAME_SECONDS, BatchRun, StepRecord
from qwen3tts.model import bundle as layout


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
    """Summed over the measured steps of one stage."""

    measured: float = 0.0  # s
    memory: float = 0.0  # s the bytes need at the copy bandwidth
    compute: float = 0.0  # s the FLOPs need at the matmul peak
    bytes: float = 0.0
    flops: float = 0.0
    frames: int = 0  # frames generated in the measured steps (the codec's cost is spread over them)

    def add(self, measured: float, num_bytes: float, flops: float, machine: MachineLimits, peak: str) -> None:
        self.measured += measured
        self.bytes += num_bytes
        self.flops += flops
        self.memory += num_bytes / machine.copy_bandwidth
        self.compute += flops / machine.peak_flops[peak]

    def as_dict(self) -> dict:
        limit = max(self.memory, self.compute)
        frames = self.frames or 1
        return {
            "bytes_per_frame": self.bytes / frames,
            "flops_per_frame": self.flops / frames,
            "bound": "memory" if self.memory >= self.compute else "compute",
            "limit_ms_per_frame": 1e3 * limit / frames,
            "measured_ms_per_frame": 1e3 * self.measured / frames,
            "share_of_limit": limit / self.measured if self.measured else 0.0,
        }


def rooflines(steps: list[StepRecord], costs: BundleCosts, machine: MachineLimits) -> dict[str, Roofline]:
    lines = {stage: Roofline() for stage in ("talker", "code_predictor", "codec")}
    peaks = costs.peak_kind
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
                    costs.talker.weight_bytes_read + kv,
                    call.tokens * costs.talker.flops + attention,
                    machine,
                    peaks["talker"],
                )
            elif call.stage == "code_predictor":
                cost = costs.code_predictor
                lines["code_predictor"].add(
                    call.seconds,
                    cost.weight_bytes_read,
                    call.rows * cost.flops,
                    machine,
                    peaks["code_predictor"],
                )
            else:
                cost = costs.codec[costs.codec_chunk(call.tokens)]
                lines["codec"].add(call.seconds, cost.weight_bytes_read, cost.flops, machine, peaks["codec"])
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
