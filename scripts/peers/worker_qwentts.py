"""qwentts.cpp side of scripts/peers/compare.py (in the peers' venv; same protocol as worker_qwen3tts.py).

The wheel (qwentts-cpp-python) exposes no EOS switch and no thread count: max_new_tokens caps the frames
(random weights do not emit EOS early; compare.py checks the count) and the native library picks its CPU
thread count itself (it logs "[Load] ... (CPU threads: N)", which goes into the ready line). Per-stage
times are the library's own "[Perf]" log lines (TalkerDecode, CodePredictor, CodecDecode, Prefill). The
first packet is 2 frames, as qwen3tts's first chunk.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from qwentts_cpp import QwenLibrary, QwenTTS

PERF = {
    "talker": re.compile(r"\[Perf\] TalkerDecode ([\d.]+) ms \((\d+) frames"),
    "code_predictor": re.compile(r"\[Perf\] CodePredictor ([\d.]+) ms"),
    "codec": re.compile(r"\[Perf\] CodecDecode ([\d.]+) ms"),
    "prefill": re.compile(r"\[Perf\] Prefill ([\d.]+) ms"),
}


class NativeLog:
    """Collects the library's log lines; the [Perf] lines carry its per-stage times."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, level: int, text: str) -> None:
        self.lines.append(text.rstrip())
        print(text.rstrip(), file=sys.stderr)

    def perf(self, since: int) -> dict:
        found = {}
        for line in self.lines[since:]:
            for key, pattern in PERF.items():
                if m := pattern.search(line):
                    found[key] = float(m.group(1))
        return found


def synthesise(tts, log: NativeLog, args, seed: int) -> dict:
    mark = len(log.lines)
    wall, cpu = time.perf_counter(), time.process_time()
    first, first_samples, samples = None, 0, 0
    for chunk, _rate in tts.stream(
        text=args.text,
        lang=args.language,
        speaker=args.speaker,
        seed=seed,
        max_new_tokens=args.frames,
        first_chunk_frames=2,
    ):
        if first is None:
            first, first_samples = time.perf_counter() - wall, len(chunk)
        samples += len(chunk)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    frames = samples // 1920  # 80 ms at 24 kHz
    perf = log.perf(mark)
    stages = {k: perf[k] / max(frames, 1) for k in ("talker", "code_predictor", "codec") if k in perf}
    return {
        "frames": frames,
        "samples": samples,
        "wall_s": wall,
        "cpu_s": cpu,
        "ttfa_s": first,
        "first_chunk_frames": first_samples / 1920,
        "stage_ms": stages,
        "prefill_ms": perf.get("prefill"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--talker", required=True)
    parser.add_argument("--codec", required=True)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--text", required=True)
    parser.add_argument("--language", default="english")
    parser.add_argument("--speaker", default="")
    args = parser.parse_args()
    log = NativeLog()
    started = time.perf_counter()
    library = QwenLibrary(log_level="info")  # installs the process-wide log callback before the model loads
    library.set_log_callback(log)
    tts = QwenTTS(args.talker, args.codec, library_path=library.path, log_level="info")
    args.speaker = args.speaker or tts.speaker_names()[0]
    synthesise(tts, log, argparse.Namespace(**{**vars(args), "frames": 8}), seed=0)
    threads = next((m.group(1) for line in log.lines if (m := re.search(r"CPU threads: (\d+)", line))), None)
    ready = {
        "engine": "qwentts",
        "version": library.version(),
        "load_s": time.perf_counter() - started,
        "speaker": args.speaker,
        "threads": threads,
    }
    print(json.dumps({"ready": ready}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        print(json.dumps(synthesise(tts, log, args, int(cmd[1]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
