"""qwen3tts side of scripts/peers/compare.py: load a bundle, then synthesise on request (one JSON line each).

Runs under the product's venv (PYTHONPATH=daemon), never the peers' venv. The engine runs on its own loop
thread as in the daemon; a TimingRunner around the OpenVINO runner splits the time per stage. Protocol:
prints {"ready": ...} once loaded and warmed up, then answers each stdin line `run SEED` with one result
line and exits on `quit`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

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
    wall, cpu = time.perf_counter(), time.process_time()
    handle = engine.submit(request)
    first, first_samples, samples = None, 0, 0
    for chunk in handle:
        if first is None:
            first, first_samples = time.perf_counter() - wall, len(chunk)
        samples += len(chunk)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    frames = int(handle.frames.shape[0])
    calls = timing.calls[mark:]
    prefill = [c for c in calls if c.stage == "talker" and c.tokens > c.rows]  # the prompt, not a decode step
    decode = [c for c in calls if c not in prefill]
    stages = {s: 1e3 * sum(c.seconds for c in decode if c.stage == s) / max(frames, 1) for s in STAGES}
    return {
        "frames": frames,
        "samples": samples,
        "wall_s": wall,
        "cpu_s": cpu,
        "ttfa_s": first,
        "first_chunk_frames": first_samples / 1920,
        "stage_ms": stages,
        "prefill_ms": 1e3 * sum(c.seconds for c in prefill),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--text", required=True)
    parser.add_argument("--language", default="english")
    parser.add_argument("--speaker", default="")
    args = parser.parse_args()
    settings = load_settings(
        overrides=[f"devices.num_threads={args.threads}", f"engine.max_frames={args.frames + 8}"]
    )
    started = time.perf_counter()
    runtime = load_runtime(args.bundle, settings)
    timing = TimingRunner(runtime.runner)
    engine = Engine(timing, runtime.prompt_builder, runtime.engine.config)
    engine.start()
    if not args.speaker and runtime.spec.variant == "custom_voice":
        args.speaker = next(iter(runtime.spec.speakers))
    warm = argparse.Namespace(**{**vars(args), "frames": 8})
    synthesise(engine, timing, warm, seed=0)
    ready = {
        "engine": "qwen3tts",
        "load_s": time.perf_counter() - started,
        "speaker": args.speaker,
        "precision": "talker + code predictor INT8 weights (f32 compute), codec f16-stored f32, KV u8",
    }
    print(json.dumps({"ready": ready}), flush=True)
    try:
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "quit":
                break
            print(json.dumps(synthesise(engine, timing, args, int(cmd[1]))), flush=True)
    finally:
        engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
