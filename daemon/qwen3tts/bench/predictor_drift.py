"""Code predictor drift at any checkpoint shape: compressed graphs against the uncompressed f32 graph.

Goldens from the official implementation exist only for tiny checkpoints (bench/fidelity.py), where
INT4 cannot use the group size it ships with. The f32 graph reproduces the official logits to ~1e-5
(the parity tests), so at the real shape it stands in for them: greedy rows with random inputs, and
per row the logits compared up to the first differing code (the graph feeds back its own codes;
after a differing code the logits answer a different question).

    python -m qwen3tts.bench.predictor_drift CHECKPOINT int8=BUNDLE/code_predictor.xml int4=...
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.graphs import code_predictor as cp

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


@dataclass(frozen=True)
class PredictorDrift:
    label: str
    max_logit_drift: float  # max |Δlogit| over the steps up to each row's first differing code
    mean_logit_drift: float
    codes_identical: int
    codes_total: int


def greedy_feed(hidden: int, vocab: int, steps: int, rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        cp.PAST_HIDDEN: rng.standard_normal((rows, hidden)).astype(np.float32),
        cp.CODE0: rng.integers(0, vocab, rows),
        cp.NOISE: np.full((rows, steps, vocab), 0.5, np.float32),
        cp.TEMPERATURE: np.zeros(rows, np.float32),  # greedy
        cp.TOP_K: np.full(rows, 50, np.int64),
        cp.TOP_P: np.ones(rows, np.float32),
    }


def compare(label: str, got: dict, want: dict) -> PredictorDrift:
    worst, total, count = 0.0, 0.0, 0
    for row in range(want[cp.CODES].shape[0]):
        differs = np.flatnonzero(got[cp.CODES][row] != want[cp.CODES][row])
        steps = int(differs[0]) + 1 if differs.size else want[cp.CODES].shape[1]
        delta = np.abs(got[cp.LOGITS][row, :steps] - want[cp.LOGITS][row, :steps])
        worst, total, count = max(worst, float(delta.max())), total + float(delta.sum()), count + delta.size
    same = int((got[cp.CODES] == want[cp.CODES]).sum())
    return PredictorDrift(label, worst, total / count, same, want[cp.CODES].size)


def measure(checkpoint: Path, graphs: dict[str, Path], rows: int = 32) -> tuple[float, list[PredictorDrift]]:
    """(logit scale, drift per labelled code_predictor.xml) against the f32 graph of `checkpoint`."""
    core, ckpt = ov.Core(), load_checkpoint(checkpoint)
    spec = ckpt.spec
    reference = cp.build_code_predictor(spec.code_predictor, spec.talker.hidden_size, ckpt.weights)
    steps = spec.code_predictor.num_code_groups - 1
    feed = greedy_feed(spec.talker.hidden_size, spec.code_predictor.vocab_size, steps, rows)
    want = {k.get_any_name(): v for k, v in core.compile_model(reference, "CPU", F32)(feed).items()}
    results = []
    for label, xml in graphs.items():
        outputs = core.compile_model(core.read_model(xml), "CPU", F32)(feed)
        results.append(compare(label, {k.get_any_name(): v for k, v in outputs.items()}, want))
    return float(np.abs(want[cp.LOGITS]).max()), results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.predictor_drift", description=__doc__)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("graphs", nargs="+", help="label=path/to/code_predictor.xml")
    parser.add_argument("--rows", type=int, default=32)
    args = parser.parse_args(argv)
    graphs = dict(g.split("=", 1) for g in args.graphs)
    scale, results = measure(args.checkpoint, {k: Path(v) for k, v in graphs.items()}, args.rows)
    print(f"logit scale {scale:.1f}, {args.rows} greedy rows")
    print("| code predictor weights | max abs dlogit | mean abs dlogit | codes identical |")
    print("|---|---|---|---|")
    for r in results:
        print(
            f"| {r.label} | {r.max_logit_drift:.3f} | {r.mean_logit_drift:.4f} "
            f"| {r.codes_identical}/{r.codes_total} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
