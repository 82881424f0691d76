"""vox-tts side of scripts/peers/compare.py (runs in the peers' venv; same protocol as worker_qwen3tts.py).

It runs in vox's `mode=speed` (its fastest; left alone it picks a mode by the hardware, measured ~5 %
slower). vox has no "EOS off" request parameter; its engine reads VOX_DEBUG_NO_EOS (compare.py sets it), and
max_frames caps the stream, so every run yields exactly --frames frames. Per-stage times come from the
engine's own counters (Engine.stats()["backend"]["seconds"]), differenced around each run.
"""

from __future__ import annotations

import sys
import time

import vox
from worker_protocol import SAMPLES_PER_FRAME, Streamed, parser, serve, warm_up_args

STAGES = {"talker": "talker", "code_predictor": "predictor", "codec": "codec"}


def seconds(engine) -> dict:
    return dict(engine.stats().get("backend", {}).get("seconds", {}))


def synthesise(engine, voice, args, seed: int) -> dict:
    before = seconds(engine)
    streamed = Streamed.consume(
        lambda: engine.stream(args.text, voice, max_frames=args.frames, seed=seed, language=args.language)
    )
    after = seconds(engine)
    frames = streamed.samples // SAMPLES_PER_FRAME
    stages = {
        ours: 1e3 * (after.get(theirs, 0.0) - before.get(theirs, 0.0)) / max(frames, 1)
        for ours, theirs in STAGES.items()
    }
    prefill = after.get("prefill", 0.0) - before.get("prefill", 0.0)
    return streamed.result(frames, stages, 1e3 * prefill)


def main() -> int:
    arguments = parser(__doc__)
    arguments.add_argument("--model", required=True)
    arguments.add_argument("--mode", default="speed", help="vox's resource mode; speed is its fastest")
    args = arguments.parse_args()
    started = time.perf_counter()
    resources = vox.Resources(device="cpu", threads=args.threads, mode=args.mode)
    engine = vox.Engine(args.model, device="cpu", threads=args.threads, resources=resources)
    speaker = args.speaker or engine.speakers[0]
    voice = engine.speaker_voice(speaker)
    synthesise(engine, voice, warm_up_args(args), seed=0)
    plan = engine.plan
    ready = {
        "engine": "vox",
        "version": vox.__version__ if hasattr(vox, "__version__") else "",
        "load_s": time.perf_counter() - started,
        "speaker": speaker,
        "mode": plan.get("mode"),
        "model": args.model.rsplit("/", 1)[-1],
        "threads": plan.get("threads"),
        "overlap": plan.get("overlap"),
        "stages": [(s["stage"], s["weight_bytes"]) for s in plan["stages"]],
    }
    serve(ready, lambda seed: synthesise(engine, voice, args, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
