"""qwen3tts side of scripts/peers/compare.py: load a bundle, then synthesise on request (one JSON line each).

Runs under the product's venv (PYTHONPATH=daemon), never the peers' venv. The engine runs on its own loop
thread as in the daemon; a TimingRunner around the OpenVINO runner splits the time per stage. Protocol:
prints {"ready": ...} once loaded and warmed up, then answers each stdin line `run SEED` with one result
line and exits on `quit`.
"""

from __future__ import annotations

import sys
import time

from worker_protocol import Streamed, parser, serve, warm_up_args

from qwen3tts.bench.timing_runner import STAGES, TimingRunner
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings


def synthesise(engine: Engine, timing: TimingRunner, args, seed: int) -> dict:
    mark = len(timing.calls)
    request = Request(
        id=f"peers-{seed}-{time.monotonic_ns()}",
        text=args.text,
        language=args.language,
        speaker=args.speaker or None,
        seed=seed,
        max_frames=args.frames + 1,  # N sampled tokens give N - 1 frames
        sampling={"min_new_tokens": args.frames + 1},  # EOS masked: exactly `frames` frames
    )
    handles = []

    def start():
        handles.append(engine.submit(request))
        return handles[0]

    streamed = Streamed.consume(start)
    frames = int(handles[0].frames.shape[0])
    calls = timing.calls[mark:]
    prefill = [c for c in calls if c.stage == "talker" and c.tokens > c.rows]  # the prompt, not a decode step
    decode = [c for c in calls if c not in prefill]
    stages = {s: 1e3 * sum(c.seconds for c in decode if c.stage == s) / max(frames, 1) for s in STAGES}
    return streamed.result(frames, stages, 1e3 * sum(c.seconds for c in prefill))


def loaded_description(runtime, settings) -> str:
    """What this process really runs: the bundle's stored precisions, the codec graphs and each decode
    stage's path (plugin, plugin+op, fused native: the ready line's words), the KV cache element type."""
    stored = ", ".join(f"{name} {value}" for name, value in sorted(runtime.manifest.precision.items()))
    paths = "; ".join(f"{stage} {path}" for stage, path in sorted(runtime.plan.decode_paths().items()))
    return (
        f"weights: {stored}; codec graphs {runtime.plan.codec_variant}; decode paths: {paths}; "
        f"KV {settings.engine.kv_cache_precision}; inference precision {settings.devices.inference_precision}"
    )


def main() -> int:
    arguments = parser(__doc__)
    arguments.add_argument("--bundle", required=True)
    arguments.add_argument("--set", action="append", default=[], help="a settings override, KEY=VALUE")
    args = arguments.parse_args()
    # The prefix cache off: a run would otherwise reuse the warm-up's prompt blocks (about 100 ms of
    # first audio and 1 ms per frame), which neither peer can.
    overrides = [f"devices.num_threads={args.threads}", f"engine.max_frames={args.frames + 8}"]
    settings = load_settings(overrides=[*overrides, "engine.prefix_caching=false", *args.set])
    started = time.perf_counter()
    runtime = load_runtime(args.bundle, settings)
    timing = TimingRunner(runtime.runner)
    engine = Engine(timing, runtime.prompt_builder, runtime.engine.config)
    engine.start()
    if not args.speaker and runtime.spec.variant == "custom_voice":
        args.speaker = next(iter(runtime.spec.speakers))
    synthesise(engine, timing, warm_up_args(args), seed=0)
    ready = {
        "engine": "qwen3tts",
        "load_s": time.perf_counter() - started,
        "speaker": args.speaker,
        "loaded": loaded_description(runtime, settings),
        "prefix_caching": settings.engine.prefix_caching,
    }
    try:
        serve(ready, lambda seed: synthesise(engine, timing, args, seed))
    finally:
        engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
