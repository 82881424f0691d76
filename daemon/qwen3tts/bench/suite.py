"""One `qwen3tts bench` invocation: prepare the bundle, load it, time the workloads, measure the
machine, and return the whole report as one JSON-ready dict (results.py assembles it, report.py renders it).
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.bench import analysis, machine, memory, workload
from qwen3tts.bench.profiling import RecordingCompiler, top_operations
from qwen3tts.bench.results import suite_results
from qwen3tts.bench.timing_runner import TimingRunner
from qwen3tts.errors import BundleError
from qwen3tts.model import bundle as layout
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchOptions:
    bundle: Path | None
    shape: str | None  # write and build a random checkpoint of this shape instead of --bundle
    work_dir: Path  # where --shape puts its checkpoint and bundle
    weights: str  # weight precision policy when building
    kv_cache_precision: str | None
    batch_sizes: tuple[int, ...]
    frames: int
    prompt_tokens: int
    repeats: int
    ttfa_concurrency: tuple[int, ...]
    ttfa_rounds: int
    profile: bool
    reference_python: Path | None  # --vs-reference
    reference_batch_sizes: tuple[int, ...]
    checkpoint: Path | None  # the checkpoint the bundle came from (for the reference side)


def prepare_bundle(options: BenchOptions) -> tuple[Path, Path | None]:
    """(bundle, checkpoint): --bundle as given, or --shape written and built once under work_dir."""
    if options.shape is None:
        if options.bundle is None:
            raise BundleError("bench needs --bundle or --shape")
        return options.bundle, options.checkpoint
    checkpoint = options.work_dir / f"ckpt-{options.shape}"
    bundle = options.work_dir / f"bundle-{options.shape}-{options.weights}"
    if not (checkpoint / "model.safetensors").exists():
        _cli("tiny", str(checkpoint), "--shape", options.shape)
    if not (bundle / layout.MANIFEST).exists():
        _cli("build", "--checkpoint", str(checkpoint), "--out", str(bundle), "--weights", options.weights)
    return bundle, checkpoint


def _cli(*args: str) -> None:
    """In a child process, so writing and building never count toward this process's peak RSS.

    Its output goes to stderr with the logs: stdout carries only the report."""
    log.info("running qwen3tts %s", " ".join(args))
    subprocess.run([sys.executable, "-m", "qwen3tts", *args], check=True, stdout=sys.stderr)


def bench_settings(settings: Settings, options: BenchOptions) -> Settings:
    batch = max(options.batch_sizes + options.ttfa_concurrency)
    engine = dataclasses.replace(
        settings.engine,
        max_num_seqs=batch,
        max_num_batched_tokens=max(settings.engine.max_num_batched_tokens, batch),
        kv_cache_precision=options.kv_cache_precision or settings.engine.kv_cache_precision,
    )
    return dataclasses.replace(settings, engine=engine)


def run_suite(options: BenchOptions, settings: Settings, baseline_rss: dict[str, int] | None = None) -> dict:
    """`baseline_rss`: resident bytes the caller measured before importing the bench (memory.components)."""
    from qwen3tts.runtime.loader import load_runtime

    bundle, checkpoint = prepare_bundle(options)
    settings = bench_settings(settings, options)
    threads = settings.devices.num_threads or machine.cpu_count()
    load_before = machine.load_average()
    compiler = RecordingCompiler(settings.devices, settings.model.cache_dir, profile=options.profile)
    ledger = memory.RssLedger.attach(compiler)
    started = time.perf_counter()
    runtime = load_runtime(bundle, settings, compiler)
    load_seconds = time.perf_counter() - started
    loaded_memory = memory.breakdown(runtime, ledger)
    timing = TimingRunner(runtime.runner)
    work = _workload(runtime, settings, options)
    reference = _start_reference(options, checkpoint, work, threads)
    try:
        runs, pairs = _timed_runs(runtime, timing, work, options, reference)
        ttfa = {
            c: workload.time_to_first_audio(
                timing, runtime.prompt_builder, runtime.engine.config, work, c, options.ttfa_rounds
            )
            for c in options.ttfa_concurrency
        }
    finally:
        if reference is not None:
            reference.close()
    used = _memory_used(loaded_memory, ledger, baseline_rss)
    # After the resident set above was read (a peak read first was below it, by what reading smaps
    # allocated), before the read limit's buffers, which are not the model's.
    peak_rss = machine.peak_rss_bytes()
    profile = top_operations(compiler) if options.profile else {}
    kinds = peak_kinds(compiler, runtime.manifest.precision)
    costs = analysis.bundle_costs(runtime.bundle_dir, runtime.manifest, _kv_bytes_per_token(runtime), kinds)
    limits = machine.measure(threads, costs.footprints(), settings.devices.native_library)
    return suite_results(
        runtime,
        compiler,
        work,
        options,
        limits,
        costs,
        runs,
        pairs,
        ttfa,
        reference,
        {
            "peak_rss_bytes": peak_rss,
            "memory": used,
            "load_s": load_seconds,
            "threads": threads,
            "loadavg_before": load_before,
            "loadavg_after": machine.load_average(),
            "profile": profile,
            "bundle": str(bundle),
        },
    )


def _memory_used(loaded_memory: dict, ledger, baseline_rss: dict[str, int] | None) -> dict:
    """The breakdown at load, what is resident after the runs, and each component's share."""
    after_runs = memory.status_bytes()
    return {
        **loaded_memory,
        "after_runs": after_runs,
        "resident_by_component": memory.resident_by_component(loaded_memory),
        "components": memory.components(
            baseline_rss or {}, ledger, loaded_memory["process"]["VmRSS"], after_runs["VmRSS"]
        ),
    }


def _workload(runtime, settings: Settings, options: BenchOptions) -> workload.Workload:
    spec = runtime.spec
    speaker = settings.voice.voice or (
        next(iter(spec.speakers), None) if spec.variant == "custom_voice" else None
    )
    language = settings.voice.language
    text, positions = workload.fixed_length_text(
        runtime.prompt_builder, options.prompt_tokens, speaker, language
    )
    track = settings.engine.text_track
    return workload.Workload(text, speaker, language, options.frames, positions, track)


def _start_reference(options, checkpoint, work, threads):
    if options.reference_python is None:
        return None
    from qwen3tts.bench.reference import ReferenceProcess

    if checkpoint is None:
        raise BundleError("--vs-reference needs the bundle's checkpoint: use --shape or --checkpoint")
    return ReferenceProcess(
        options.reference_python, checkpoint, options.frames, work.text, work.speaker, work.language, threads
    )


def _timed_runs(runtime, timing, work, options, reference):
    """Warm up, then repeats x batch sizes; each reference run right after its product twin."""
    config, builder = runtime.engine.config, runtime.prompt_builder
    warm = dataclasses.replace(work, frames=min(work.frames, 8))
    workload.run_batch(timing, builder, config, warm, 1, repeat=-1)
    if reference is not None:
        reference.wait_ready()
    runs, pairs = [], []
    for repeat in range(options.repeats):
        for batch in options.batch_sizes:
            run = workload.run_batch(timing, builder, config, work, batch, repeat)
            runs.append(run)
            _log_run(run)
            if reference is not None and batch in options.reference_batch_sizes:
                theirs = reference.run(batch)
                log.info("reference batch %d: %.2f s end to end", batch, theirs["e2e_s"])
                pairs.append(
                    {
                        **theirs,
                        "repeat": repeat,
                        "product_e2e_s": run.e2e_seconds,
                        "speedup": theirs["e2e_s"] / run.e2e_seconds,
                    }
                )
    return runs, pairs


def _log_run(run: workload.BatchRun) -> None:
    steps = run.decode_steps or run.steps
    stage_ms = {
        stage: 1e3 * sum(s.seconds(stage) for s in steps) / len(steps)
        for stage in ("talker", "code_predictor", "codec")
    }
    log.info(
        "batch %d repeat %d: %.2f s end to end; per decode step: %s, host %.1f ms, wall %.1f ms",
        run.batch,
        run.repeat,
        run.e2e_seconds,
        ", ".join(f"{k} {v:.1f} ms" for k, v in stage_ms.items()),
        1e3 * sum(s.host for s in steps) / len(steps),
        1e3 * sum(s.wall for s in steps) / len(steps),
    )


def peak_kinds(compiler: RecordingCompiler, precision: dict[str, str]) -> dict[str, str]:
    """Which measured peak bounds each stage: int8-weight stages take the compressed-weight path, and so
    does a stage with no compiled graph to ask (the fused native code predictor on INT8 or INT4 weights,
    the native talker step: native/'s compressed-weight kernels)."""
    stages = ("talker", "code_predictor", "codec")
    compiled = {s: compiler.precision(s) for s in stages if precision.get(s) != "int8"}
    return {s: compiled.get(s) or "int8_weights" for s in stages}


def _kv_bytes_per_token(runtime) -> float:
    runner = runtime.runner
    return runner.kv_cache_bytes / runner.num_kv_blocks / runner.block_size
