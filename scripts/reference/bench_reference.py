"""Time the official Qwen3-TTS implementation on a checkpoint, for `qwen3tts bench --vs-reference`.

Runs in the reference venv (torch + qwen-tts; see README.md here). Loads the checkpoint with the
official `Qwen3TTSModel` (fp32, CPU) and generates a fixed number of frames: EOS is masked for the
whole run by forcing the talker's HF `min_new_tokens` to `max_new_tokens` (the wrapper hard-codes 2).
The same trick keeps the product's frame count fixed, so both sides do the same work.

Two modes:
    python bench_reference.py --checkpoint DIR --frames 32 --batch-sizes 1,8 --repeats 3   # one JSON
    python bench_reference.py --checkpoint DIR --frames 32 --serve
        one JSON line {"ready": ...} after loading, then one line of timings per input line {"batch": N};
        `qwen3tts bench` uses this to alternate product and reference runs pair by pair.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stubs

stubs.install()

import torch  # noqa: E402
from qwen_tts import Qwen3TTSModel  # noqa: E402

SAMPLES_PER_FRAME = 1920
DEFAULT_TEXT = "station platform announcement evening service passengers delay minutes."


class Timer:
    """Wraps a bound method and adds its wall time to `seconds`."""

    def __init__(self, owner, name: str):
        self.seconds = 0.0
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        setattr(owner, name, timed)


def force_fixed_length(talker) -> None:
    """EOS can never be sampled before max_new_tokens: every run has the same number of frames."""
    original = talker.generate

    def generate(*args, **kwargs):
        kwargs["min_new_tokens"] = kwargs["max_new_tokens"]
        return original(*args, **kwargs)

    talker.generate = generate


class ReferenceBench:
    def __init__(self, checkpoint: Path, frames: int, text: str, speaker: str | None, language: str):
        started = time.perf_counter()
        self.tts = Qwen3TTSModel.from_pretrained(str(checkpoint), device_map="cpu", dtype=torch.float32)
        self.load_s = time.perf_counter() - started
        model = self.tts.model
        force_fixed_length(model.talker)
        self.code_predictor = Timer(model.talker.code_predictor, "generate")
        self.codec = Timer(model.speech_tokenizer, "decode")
        self.frames, self.text, self.language = frames, text, language
        self.speaker = speaker or (self.tts.get_supported_speakers() or [None])[0]

    def run(self, batch: int, seed: int) -> dict:
        torch.manual_seed(seed)
        self.code_predictor.seconds = self.codec.seconds = 0.0
        started = time.perf_counter()
        wavs, _ = self.tts.generate_custom_voice(
            text=[self.text] * batch,
            speaker=self.speaker,
            language=self.language,
            max_new_tokens=self.frames + 1,  # as in the product: N sampled tokens give N - 1 frames
        )
        e2e = time.perf_counter() - started
        frames = [len(w) // SAMPLES_PER_FRAME for w in wavs]
        return {
            "batch": batch,
            "frames": min(frames),
            "e2e_s": e2e,
            "code_predictor_s": self.code_predictor.seconds,
            "codec_s": self.codec.seconds,
            "talker_and_host_s": e2e - self.code_predictor.seconds - self.codec.seconds,
        }

    def facts(self) -> dict:
        return {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "dtype": "float32",
            "load_s": self.load_s,
            "speaker": self.speaker,
            "frames": self.frames,
        }


def serve(bench: ReferenceBench, protocol) -> None:
    print(json.dumps({"ready": True, **bench.facts()}), file=protocol, flush=True)
    for seed, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        command = json.loads(line)
        if command.get("quit"):
            break
        print(json.dumps(bench.run(int(command["batch"]), seed)), file=protocol, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--frames", type=int, default=32, help="frames per request (EOS disabled)")
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument("--speaker", help="CustomVoice preset (default: the first one)")
    parser.add_argument("--language", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--batch-sizes", default="1", help="comma-separated, standalone mode")
    parser.add_argument("--repeats", type=int, default=3, help="standalone mode")
    parser.add_argument("--serve", action="store_true", help='answer {"batch": N} lines on stdin')
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    protocol = sys.stdout
    if args.serve:  # the official code prints progress to stdout; only protocol lines may go there
        sys.stdout = sys.stderr
    bench = ReferenceBench(args.checkpoint, args.frames, args.text, args.speaker, args.language)
    if args.serve:
        serve(bench, protocol)
        return 0
    runs = [bench.run(int(b), r) for r in range(args.repeats) for b in args.batch_sizes.split(",")]
    medians = {
        b: statistics.median(r["e2e_s"] for r in runs if r["batch"] == int(b))
        for b in args.batch_sizes.split(",")
    }
    print(json.dumps({**bench.facts(), "runs": runs, "median_e2e_s": medians}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
