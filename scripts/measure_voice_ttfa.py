"""Time to first audio of requests that share a voice, prefix cache cold and warm, on and off.

    PYTHONPATH=daemon .venv/bin/python scripts/measure_voice_ttfa.py BUNDLE [--instruct T | --icl] [--runs N]

A Base bundle speaks with the x-vector of a synthetic 10 s reference (written to a temporary WAV: no
downloads), or with --icl by in-context cloning (the reference's codes and a transcript in the prompt,
encoded once beforehand as `qwen3tts voice add` does; the encoding time is printed); a VoiceDesign
bundle with --instruct. For each setting of engine.prefix_caching a fresh
engine serves N requests of the same voice, one after the other, with different texts: the first is
cold (x-vector computed, nothing cached), the others warm. Prints milliseconds from submit() to the
first PCM chunk and the prompt positions the prefix cache skipped.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

from qwen3tts.engine.sequence import Request
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

TEXTS = [
    "The train to Berlin leaves from platform four.",
    "Doors closing, please stand back.",
    "The shop closes in fifteen minutes.",
    "Please keep your belongings with you.",
    "Welcome aboard, next stop the central station.",
    "Mind the gap between the train and the platform.",
]


def reference_wav(directory: Path, seconds: float = 10.0, rate: int = 16000) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)  # syllable-rate loudness
    tone = envelope * sum(np.sin(2 * np.pi * 130 * k * t) / k for k in range(1, 8))
    path = directory / "reference-10s.wav"
    soundfile.write(str(path), 0.3 * tone / np.abs(tone).max(), rate, subtype="PCM_16")
    return path


REF_TEXT = "Good morning, this is the reference recording of the station announcer speaking."


def measure(bundle: Path, prefix_caching: bool, runs: int, ref: Path | None, instruct: str | None, icl=False):
    settings = load_settings(None, [f"engine.prefix_caching={str(prefix_caching).lower()}"])
    runtime = load_runtime(bundle, settings)
    engine = runtime.engine
    if icl:
        started = time.perf_counter()
        runtime.prompt_builder.register_voice("voice:ref", runtime.voice_encoder.encode_file(ref, REF_TEXT))
        print(f"  ICL voice encoded in {1000 * (time.perf_counter() - started):.0f} ms (once, at voice add)")
    engine.start()
    ttfa = []
    try:
        for i in range(runs):
            request = Request(
                id=f"m{i}", text=TEXTS[i % len(TEXTS)], language="english", instruct=instruct,
                ref_audio="voice:ref" if icl else (str(ref) if ref else None), seed=i, max_frames=8,
            )  # fmt: skip
            started = time.perf_counter()
            handle = engine.submit(request)
            next(iter(handle))
            ttfa.append(1000 * (time.perf_counter() - started))
            handle.result(60)
    finally:
        engine.stop()
    bm = engine.block_manager
    return ttfa, bm.block_size, bm.num_prefix_hit_tokens, bm.num_prefix_queried_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--instruct", help="VoiceDesign description (the voice of a voice_design bundle)")
    parser.add_argument("--icl", action="store_true", help="Base: clone with reference codes + transcript")
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref = None if args.instruct else reference_wav(Path(tmp))
        for on in (False, True):
            ttfa, block, hits, queried = measure(args.bundle, on, args.runs, ref, args.instruct, args.icl)
            print(
                f"prefix_caching={'on ' if on else 'off'}  cold {ttfa[0]:7.1f} ms  "
                f"warm median {statistics.median(ttfa[1:]):7.1f} ms  "
                f"(block {block}, {hits}/{queried} prompt positions from the cache)"
            )


if __name__ == "__main__":
    main()
