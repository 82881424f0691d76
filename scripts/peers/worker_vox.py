"""vox-tts side of scripts/peers/compare.py (runs in the peers' venv; same protocol as worker_qwen3tts.py).

vox has no "EOS off" request parameter; its engine reads VOX_DEBUG_NO_EOS (compare.py sets it), and
max_frames caps the stream, so every run yields exactly --frames frames. Per-stage times come from the
engine's own counters (Engine.stats()["backend"]["seconds"]), differenced around each run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import vox

STAGES = {"talker": "talker", "code_predictor": "predictor", "codec": "codec"}


def seconds(engine) -> dict:
    return dict(engine.stats().get("backend", {}).get("seconds", {}))


def synthesise(engine, voice, args, seed: int) -> dict:
    before = seconds(engine)
    wall, cpu = time.perf_counter(), time.process_time()
    first, first_samples, samples = None, 0, 0
    for chunk in engine.stream(args.text, voice, max_frames=args.frames, seed=seed, language=args.language):
        if first is None:
            first, first_samples = time.perf_counter() - wall, len(chunk)
        samples += len(chunk)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = seconds(engine)
    frames = samples // 1920  # 80 ms at 24 kHz
    stages = {
        ours: 1e3 * (after.get(theirs, 0.0) - before.get(theirs, 0.0)) / max(frames, 1)
        for ours, theirs in STAGES.items()
    }
    prefill = after.get("prefill", 0.0) - before.get("prefill", 0.0)
    return {
        "frames": frames,
        "samples": samples,
        "wall_s": wall,
        "cpu_s": cpu,
        "ttfa_s": first,
        "first_chunk_frames": first_samples / 1920,
        "stage_ms": stages,
        "prefill_ms": 1e3 * prefill,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--text", required=True)
    parser.add_argument("--language", default="english")
    parser.add_argument("--speaker", default="")
    args = parser.parse_args()
    started = time.perf_counter()
    engine = vox.Engine(args.model, device="cpu", threads=args.threads)
    speaker = args.speaker or engine.speakers[0]
    voice = engine.speaker_voice(speaker)
    synthesise(engine, voice, argparse.Namespace(**{**vars(args), "frames": 8}), seed=0)
    plan = engine.plan
    ready = {
        "engine": "vox",
        "version": vox.__version__ if hasattr(vox, "__version__") else "",
        "load_s": time.perf_counter() - started,
        "speaker": speaker,
        "threads": plan.get("threads"),
        "overlap": plan.get("overlap"),
        "stages": [(s["stage"], s["weight_bytes"]) for s in plan["stages"]],
    }
    print(json.dumps({"ready": ready}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        print(json.dumps(synthesise(engine, voice, args, int(cmd[1]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
