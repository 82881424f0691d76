"""The suite's results: what one bench run measured, as the JSON-ready report (report.py renders it).

Section by section: the machine and its limits, the bundle and its graph costs, the workload, the
per-batch summaries against each stage's physical limit, time to first audio, the pairs with the
official implementation, and the profile.
"""

from __future__ import annotations

import dataclasses
import platform
import statistics

from qwen3tts.bench import analysis, machine, workload


def suite_results(
    runtime, compiler, work, options, limits, costs, runs, pairs, ttfa, reference, facts
) -> dict:
    """`facts`: what run_suite measured besides the runs (memory, load time, load average, profile)."""
    kv_per_token = costs.kv_bytes_per_token
    for kind in set(costs.peak_kind.values()) - set(limits.peak_flops):
        limits.peak_flops[kind] = machine.matmul_peak(kind, limits.threads)
    summaries = [analysis.summarize_run(run, costs, limits) for run in runs]
    by_batch = {
        b: analysis.median_summary([s for s in summaries if s["batch"] == b]) for b in options.batch_sizes
    }
    return {
        "machine": _machine_section(limits, facts),
        "bundle": _bundle_section(runtime, compiler, costs, facts),
        "workload": _workload_section(work, options, facts),
        "load_s": facts["load_s"],
        "peak_rss_bytes": facts["peak_rss_bytes"],
        "memory": facts["memory"],  # per-component breakdown (bench/memory.py)
        "kv_bytes_per_token": kv_per_token,
        "kv_bytes_per_audio_second": kv_per_token / workload.FRAME_SECONDS,
        "batches": by_batch,
        "runs": summaries,
        "ttfa": _ttfa_section(ttfa),
        "reference": _reference_section(reference, pairs),
        "profile": {graph: [dataclasses.asdict(op) for op in ops] for graph, ops in facts["profile"].items()},
    }


def _machine_section(limits, facts: dict) -> dict:
    return {
        "cpu": machine.cpu_model(),
        "platform": platform.platform(),
        **dataclasses.asdict(limits),
        "loadavg_before": facts["loadavg_before"],
        "loadavg_after": facts["loadavg_after"],
    }


def _bundle_section(runtime, compiler, costs, facts: dict) -> dict:
    return {
        "path": facts["bundle"],
        "spec_size": runtime.spec.size,
        "variant": runtime.spec.variant,
        "precision": runtime.manifest.precision,
        "codec_chunks": runtime.manifest.codec_chunks,
        "codec_variant": runtime.plan.codec_variant,
        "inference_precision": {p.component: p.inference_precision for p in compiler.parts},
        "decode_paths": runtime.plan.decode_paths(),  # a fused stage has no compiled graph above
        "kv_cache_precision": compiler.kv_cache_precision(),
        "peak_kind": costs.peak_kind,
        "graph_costs": {
            "talker": dataclasses.asdict(costs.talker),
            "code_predictor": dataclasses.asdict(costs.code_predictor),
            "codec": {n: dataclasses.asdict(c) for n, c in costs.codec.items()},
        },
    }


def _workload_section(work, options, facts: dict) -> dict:
    return {
        "frames": work.frames,
        "prompt_tokens": work.prompt_tokens,
        "text_track": work.text_track,
        "text": work.text,
        "repeats": options.repeats,
        "batch_sizes": list(options.batch_sizes),
        "threads": facts["threads"],
        "profiled": options.profile,
    }


def _ttfa_section(ttfa: dict[int, list[workload.FirstAudio]]) -> dict:
    return {c: _ttfa_entry(waits) for c, waits in ttfa.items()}


def _ttfa_entry(waits: list[workload.FirstAudio]) -> dict:
    seconds = [w.seconds for w in waits]
    return {
        "p50_s": workload.percentile(seconds, 50),
        "p95_s": workload.percentile(seconds, 95),
        "samples": seconds,
        "stages_p50_s": {  # where the wait went: each stage's runner seconds before the first chunk
            stage: workload.percentile([w.stages[stage] for w in waits], 50) for stage in waits[0].stages
        },
        "sentence": workload.TTFA_SENTENCE.format("<n>", "<m>"),
    }


def _reference_section(reference, pairs: list[dict]) -> dict | None:
    if reference is None:
        return None
    batches = sorted({p["batch"] for p in pairs})
    return {
        "facts": reference.facts,
        "pairs": pairs,
        "by_batch": {
            b: {
                "speedup_median": statistics.median(p["speedup"] for p in pairs if p["batch"] == b),
                "reference_e2e_s_median": statistics.median(p["e2e_s"] for p in pairs if p["batch"] == b),
                "product_e2e_s_median": statistics.median(
                    p["product_e2e_s"] for p in pairs if p["batch"] == b
                ),
            }
            for b in batches
        },
    }
