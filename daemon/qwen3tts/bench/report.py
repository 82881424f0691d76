"""Rendering a bench report: JSON (everything), a Markdown summary for stdout, and a PNG plot."""

from __future__ import annotations

import json
from pathlib import Path

from qwen3tts.bench.timing_runner import STAGES as RUNNER_STAGES
from qwen3tts.errors import NotAvailableError

STAGES = ("talker", "code_predictor", "codec", "host")


def write_json(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")


def _paths(paths: dict[str, str]) -> str:
    """talker plugin, code_predictor fused native avx512_vnni (DevicePlan.decode_paths)."""
    return ", ".join(f"{stage} {path}" for stage, path in paths.items()) or "unknown"


def _ttfa_lines(ttfa: dict) -> list[str]:
    """First audio, and the runner's time per stage before it (p50 each: prefill is the talker's)."""
    lines = [
        "",
        "| concurrent requests | time to first audio p50 | p95 | talker p50 | code pred. p50 | codec p50 |",
        "|---|---|---|---|---|---|",
    ]
    for concurrency, t in ttfa.items():
        stages = t.get("stages_p50_s", {})
        parts = " | ".join(f"{1e3 * stages[s]:.0f} ms" if s in stages else "-" for s in RUNNER_STAGES)
        lines.append(f"| {concurrency} | {1e3 * t['p50_s']:.0f} ms | {1e3 * t['p95_s']:.0f} ms | {parts} |")
    return lines


def markdown(report: dict) -> str:
    lines = _header_lines(report["machine"], report["bundle"], report["workload"])
    lines += _stage_lines(report["batches"])
    lines += _limit_lines(report["batches"])
    lines += _ttfa_lines(report["ttfa"])
    lines += [
        "",
        f"Peak RSS {report['peak_rss_bytes'] / 2**20:.0f} MiB; KV cache "
        f"{report['kv_bytes_per_audio_second'] / 2**10:.0f} KiB per second of audio per stream; "
        f"load {report['load_s']:.1f} s.",
    ]
    lines += _memory_lines(report.get("memory", {}))
    lines += _reference_lines(report.get("reference"))
    lines += _profile_lines(report.get("profile") or {})
    return "\n".join(lines) + "\n"


def _header_lines(m: dict, b: dict, w: dict) -> list[str]:
    """What was measured, on what machine, under which load."""
    return [
        f"## qwen3tts bench: {b['spec_size']} {b['variant']}, weights {_precisions(b['precision'])}, "
        f"KV {b['kv_cache_precision']}; decode {_paths(b.get('decode_paths', {}))}",
        "",
        f"{m['cpu']}, {w['threads']} threads; {_read_limits(m)}; matmul peak "
        + ", ".join(f"{k} {v / 1e9:.0f} GFLOP/s" for k, v in m["peak_flops"].items())
        + f"; load average {_load(m['loadavg_before'])} before, {_load(m['loadavg_after'])} after.",
        f"{w['frames']} frames per request (EOS off), prompt {w['prompt_tokens']} talker positions "
        f"(text track {w.get('text_track', 'auto')}), "
        f"median of {w['repeats']} runs"
        + (" (PROFILED: per-op counters slow inference)" if w["profiled"] else "")
        + ".",
    ]


def _stage_lines(batches: dict) -> list[str]:
    """Per batch size: each stage's time per frame, the real-time factor and the throughput."""
    lines = [
        "ms/frame are means over the steady decode steps of the median run: talker + code predictor + "
        "codec + host = total (the codec's chunk calls spread over the frames generated meanwhile; host "
        "is the engine's Python and numpy between the calls). The roofline table and the plot show the "
        "same figures.",
        "",
        "| batch | talker ms/frame | code pred. ms/frame | codec ms/frame | host ms/frame | total ms/frame "
        "| RTF per stream | frames/s | x real time | host share |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for batch, s in batches.items():
        if not s.get("decode_steps"):
            lines.append(f"| {batch} | (too few frames for a steady decode step) |||||||||")
            continue
        f = s["per_frame_ms"]
        lines.append(
            f"| {batch} | {f['talker']:.1f} | {f['code_predictor']:.1f} | {f['codec']:.1f} | {f['host']:.1f} "
            f"| {f['total']:.1f} | {s['rtf_per_stream']:.2f} | {s['frames_per_s']:.1f} "
            f"| {s['x_real_time']:.2f} | {100 * s['host_share']:.0f} % |"
        )
    return lines


def _limit_lines(batches: dict) -> list[str]:
    """Per batch size and stage: the share of its physical limit (the roofline)."""
    lines = [
        "",
        "Share of each stage's physical limit. Share of read limit: bytes read per second over the stage's "
        "read limit above (bytes are the weights and, for the talker, the KV cache read). Share: of the "
        "roofline, max(bytes / read limit, FLOPs / peak), whose denominator the last column names:",
        "",
        "| batch | stage | weight MB/frame | GFLOP/frame | weight GB/s | share of read limit | bound "
        "| limit ms/frame | measured ms/frame | share | of |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for batch, s in batches.items():
        for stage, lim in s.get("limits", {}).items():
            lines.append(
                f"| {batch} | {stage} | {lim['weight_bytes_per_frame'] / 1e6:.1f} "
                f"| {lim['flops_per_frame'] / 1e9:.2f} | {lim['weight_gb_per_s']:.1f} "
                f"| {_percent(lim['share_of_read_limit'])} | {lim['bound'] or '-'} "
                f"| {_number(lim['limit_ms_per_frame'], '.1f')} "
                f"| {lim['measured_ms_per_frame']:.1f} | {_percent(lim['share_of_limit'])} "
                f"| {lim['denominator']} |"
            )
    return lines


def _memory_lines(section: dict) -> list[str]:
    """The resident set after the runs as consecutive growths per component (bench/memory.components)."""
    parts = section.get("components")
    if not parts:
        return []
    total = sum(parts.values())
    return [
        "",
        f"Resident after the runs, {total / 2**20:.0f} MiB, by component (MiB of growth, in load order): "
        + ", ".join(f"{name} {value / 2**20:.0f}" for name, value in parts.items())
        + ".",
    ]


def _reference_lines(reference: dict | None) -> list[str]:
    if not reference:
        return []
    facts = reference["facts"]
    lines = [
        "",
        f"Official implementation (torch {facts['torch']}, {facts['dtype']}, {facts['threads']} threads), "
        "same checkpoint and frames, runs paired with ours:",
        "",
        "| batch | reference s | qwen3tts s | speed-up (median of pairs) |",
        "|---|---|---|---|",
    ]
    for batch, r in reference["by_batch"].items():
        lines.append(
            f"| {batch} | {r['reference_e2e_s_median']:.2f} | {r['product_e2e_s_median']:.2f} "
            f"| {r['speedup_median']:.1f}x |"
        )
    return lines


def _profile_lines(profile: dict) -> list[str]:
    lines = []
    for graph, ops in profile.items():
        lines += [
            "",
            f"Top operations, {graph} (last inference):",
            "",
            "| op | type | kernel | ms | share |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {op['name'][:48]} | {op['kind']} | {op['exec_type']} | {op['ms']:.2f} "
            f"| {100 * op['share']:.0f} % |"
            for op in ops
        ]
    return lines


def _read_limits(machine: dict) -> str:
    """The read limit of each stage (the denominator of its memory-bound share), or why there is none."""
    if not machine.get("read"):
        return f"read limit NOT MEASURED ({machine.get('read_unavailable')}), so no memory-bound share"
    return "read limit (native streaming read over the stage's weight footprint) " + ", ".join(
        f"{stage} {r['bytes_per_s'] / 1e9:.1f} GB/s over {r['buffer_bytes'] / 1e6:.1f} MB"
        for stage, r in machine["read"].items()
    )


def _number(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _percent(share) -> str:
    return "-" if share is None else f"{100 * share:.0f} %"


def _precisions(precision: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(precision.items()))


def _load(values) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def require_matplotlib() -> None:
    """Checked before a long run, so a missing dev extra does not waste it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise NotAvailableError("--plot needs matplotlib, a dev extra: pip install -e '.[dev]'") from exc


def plot(report: dict, path: Path) -> None:
    """Stacked per-stage ms per frame by batch size, and x real time, as a PNG."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    batches = [b for b, s in report["batches"].items() if s.get("decode_steps")]
    figure, (stages_ax, speed_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    bottom = [0.0] * len(batches)
    labels = [str(b) for b in batches]
    for stage in STAGES:
        values = [report["batches"][b]["per_frame_ms"][stage] for b in batches]
        stages_ax.bar(labels, values, bottom=bottom, label=stage)
        bottom = [x + y for x, y in zip(bottom, values, strict=True)]
    stages_ax.axhline(80, color="black", linestyle="--", linewidth=1, label="real time (80 ms)")
    stages_ax.set(
        xlabel="batch size", ylabel="ms per frame (per stream: x batch)", title="Time per frame by stage"
    )
    stages_ax.legend(fontsize=8)
    frames = report["workload"]["frames"]
    speed_ax.plot(
        labels,
        [report["batches"][b]["x_real_time"] for b in batches],
        marker="o",
        label="qwen3tts, steady decode",
    )
    speed_ax.plot(
        labels,
        [report["batches"][b]["e2e_frames_per_s"] * 0.08 for b in batches],
        marker="o",
        linestyle=":",
        label="qwen3tts, end to end",
    )
    reference = report.get("reference") or {}
    ref_points = [
        (str(b), int(b) * frames * 0.08 / r["reference_e2e_s_median"])
        for b, r in reference.get("by_batch", {}).items()
    ]
    if ref_points:
        speed_ax.plot(*zip(*ref_points, strict=True), marker="s", label="official (PyTorch), end to end")
    speed_ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    speed_ax.set(xlabel="batch size", ylabel="aggregate x real time", title="Throughput")
    speed_ax.legend(fontsize=8)
    b = report["bundle"]
    figure.suptitle(f"qwen3tts bench: {b['spec_size']}, {report['machine']['cpu']}", fontsize=9)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
