"""qwentts.cpp side of scripts/peers/compare.py (in the peers' venv; same protocol as worker_qwen3tts.py).

The wheel (qwentts-cpp-python) exposes no EOS switch and no thread count: max_new_tokens caps the frames
(random weights do not emit EOS early; compare.py checks the count) and the native library picks its CPU
thread count itself (it logs "[Load] ... (CPU threads: N)", which goes into the ready line). Per-stage
times are the library's own "[Perf]" log lines (TalkerDecode, CodePredictor, CodecDecode, Prefill). The
first packet is 2 frames, as qwen3tts's first chunk.
"""

from __future__ import annotations

import re
import sys
import time

from qwentts_cpp import QwenLibrary, QwenTTS
from worker_protocol import SAMPLES_PER_FRAME, Streamed, parser, serve, warm_up_args

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
    streamed = Streamed.consume(
        lambda: (
            chunk
            for chunk, _rate in tts.stream(
                text=args.text,
                lang=args.language,
                speaker=args.speaker,
                seed=seed,
                max_new_tokens=args.frames,
                first_chunk_frames=2,
            )
        )
    )
    frames = streamed.samples // SAMPLES_PER_FRAME
    perf = log.perf(mark)
    stages = {k: perf[k] / max(frames, 1) for k in ("talker", "code_predictor", "codec") if k in perf}
    return streamed.result(frames, stages, perf.get("prefill"))


def main() -> int:
    arguments = parser(__doc__, threads=False)  # the library picks its thread count itself
    arguments.add_argument("--talker", required=True)
    arguments.add_argument("--codec", required=True)
    args = arguments.parse_args()
    log = NativeLog()
    started = time.perf_counter()
    library = QwenLibrary(log_level="info")  # installs the process-wide log callback before the model loads
    library.set_log_callback(log)
    tts = QwenTTS(args.talker, args.codec, library_path=library.path, log_level="info")
    args.speaker = args.speaker or tts.speaker_names()[0]
    synthesise(tts, log, warm_up_args(args), seed=0)
    threads = next((m.group(1) for line in log.lines if (m := re.search(r"CPU threads: (\d+)", line))), None)
    ready = {
        "engine": "qwentts",
        "version": library.version(),
        "load_s": time.perf_counter() - started,
        "speaker": args.speaker,
        "threads": threads,
    }
    serve(ready, lambda seed: synthesise(tts, log, args, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
