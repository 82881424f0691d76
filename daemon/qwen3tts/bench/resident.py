"""`python -m qwen3tts.bench.resident --bundle DIR`: where the resident bytes are after each load step
and stage, without a benchmark run (issue 16 memory).

Loads the bundle as the daemon does, then runs one talker prefill and decode step, one code-predictor
frame and one codec chunk, printing after each: VmRSS / RssAnon / RssFile / VmHWM and the resident
bytes of every mapping of at least 4 MiB (weight files, compile-cache blobs, anonymous memory).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

from qwen3tts.bench.memory import resident_by_mapping, status_bytes
from qwen3tts.engine.runner import TalkerChunk

MIB = 1 << 20


def report(label: str) -> None:
    mib = {key: value / MIB for key, value in status_bytes().items()}
    print(
        f"{label}: RSS {mib.get('VmRSS', 0):.0f} MiB (anonymous {mib.get('RssAnon', 0):.0f},"
        f" file {mib.get('RssFile', 0):.0f}), peak {mib.get('VmHWM', 0):.0f} MiB"
    )
    for name, sizes in resident_by_mapping(min_bytes=4 * MIB).items():
        print(f"    {name:40s} {sizes['rss'] / MIB:8.1f} MiB")


def run_stages(runtime) -> None:
    """One pass of each stage on a fresh sequence (blocks 0-1, codec stream 0)."""
    runner, spec = runtime.runner, runtime.spec
    rng = np.random.default_rng(0)
    prompt = 0.02 * rng.standard_normal((40, spec.talker.hidden_size)).astype(np.float32)
    blocks = list(range(min(2, runner.num_kv_blocks)))
    _, hidden = runner.talker([TalkerChunk(0, prompt, 0, blocks)])
    _, hidden = runner.talker([TalkerChunk(0, prompt[:1], 40, blocks)])
    report("talker prefill 40 + 1 decode step")
    vocab, groups = spec.code_predictor.vocab_size, spec.code_predictor.num_code_groups
    noise = rng.random((1, groups - 1, vocab), dtype=np.float32)
    ones = np.ones(1, dtype=np.float32)
    runner.code_predictor(hidden, np.zeros(1, np.int64), noise, 0.9 * ones, np.full(1, 50), ones)
    report("code predictor frame")
    runner.codec_open(0)
    runner.codec_decode(0, np.zeros((max(runtime.manifest.codec_chunks), groups), np.int64))
    runner.codec_close(0)
    report("codec chunk")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.resident", description=__doc__)
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="settings override")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    from qwen3tts.runtime.loader import load_runtime
    from qwen3tts.settings_loader import load_settings

    report("imports")
    runtime = load_runtime(args.bundle, load_settings(args.config, args.set))
    report("loaded")
    run_stages(runtime)


if __name__ == "__main__":
    main()
