"""What the code predictor's tie fallbacks keep: live malloc'd bytes around each infer (glibc's mallinfo2).

`exact_topk` (model/graphs/gumbel_sampler.py) runs a stable TopK in an `If` only when the top k hold a
tie; the CPU plugin gives the If's body its memory the first time it runs (docs/benchmarks.md, "Flat
memory"). Two measurements:

    PYTHONPATH=daemon .venv/bin/python scripts/measure_tie_fallback_memory.py topk
    PYTHONPATH=daemon .venv/bin/python scripts/measure_tie_fallback_memory.py bundle var/heap-long/bundle \\
        --frames 12000 [--as-loaded]

`topk`: exact_topk alone, with and without a forced tie, for a new k and larger batches. `bundle`: a
bundle's code predictor compiled on CPU (f32), random hidden states, top-k 50; prints every infer after
which live memory rose by more than 32 KiB and the first frame each step tied. As the bundle's graph is,
or with `--as-loaded` as the daemon loads it since the tie fallbacks take their memory at load: the
switch added (runtime/tie_fallback.py), warmed up with the fallbacks forced (runtime/warm_up.py), then
every frame with the switch off.
"""

from __future__ import annotations

import argparse
import ctypes
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.bundle import read_manifest
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.model.graphs.gumbel_sampler import exact_topk
from qwen3tts.runtime.tie_fallback import add_fallback_switch, switch_feed
from qwen3tts.runtime.warm_up import warm_up_code_predictor
from qwen3tts.settings import EngineSettings

PROPERTIES = {"INFERENCE_PRECISION_HINT": "f32"}  # as the daemon's log says it compiles on this CPU class
WIDTH = 2048


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")
    ]  # fmt: skip


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _MallInfo2


def live() -> int:
    """Bytes malloc has handed out and not had back (small chunks and mmapped ones)."""
    info = _libc.mallinfo2()
    return info.uordblks + info.hblkhd


def topk() -> None:
    x, k = ops.parameter([-1, WIDTH], np.float32), ops.parameter([], np.int64)
    values, ids = exact_topk(x.output(0), k.output(0), WIDTH)
    model = ov.Model([ops.result(values), ops.result(ids)], [x, k])
    request = ov.Core().compile_model(model, "CPU", PROPERTIES).create_infer_request()
    rng = np.random.default_rng(0)

    def kept(tie: bool, top_k: int = 50, batch: int = 1) -> int:
        row = rng.standard_normal((batch, WIDTH)).astype(np.float32)
        if tie:
            row[0, 1] = row[0].max()  # two equal maxima
        before = live()
        request.infer({0: row, 1: np.array(top_k, np.int64)})
        return live() - before

    print("no tie:", [kept(False) for _ in range(5)])
    print("tie, k 50:", [kept(True) for _ in range(5)])
    print("tie, k 40:", [kept(True, 40) for _ in range(3)])
    print("tie, batch 4:", [kept(True, 50, 4) for _ in range(3)])
    print("tie, batch 8:", [kept(True, 50, 8) for _ in range(3)])


def bundle(path: Path, frames: int, as_loaded: bool = False, top_k: int = 50) -> None:
    model = ov.Core().read_model(path / "code_predictor.xml")
    if as_loaded:
        add_fallback_switch(model)
    compiled = ov.Core().compile_model(model, "CPU", PROPERTIES)
    if as_loaded:
        spec = read_manifest(path).spec
        engine = EngineSettings(max_num_seqs=1, subtalker_top_k=top_k)  # the frames below: one row, this k
        print(
            "warm-up:", warm_up_code_predictor(compiled, spec.code_predictor, spec.talker.hidden_size, engine)
        )
    request = compiled.create_infer_request()
    noise_shape = compiled.input(cp.NOISE).get_partial_shape()
    hidden = compiled.input(cp.PAST_HIDDEN).get_partial_shape()[1].get_length()
    steps, vocab = noise_shape[1].get_length(), noise_shape[2].get_length()
    rng = np.random.default_rng(1)
    first_tie: dict[int, int] = {}
    rises = []
    for frame in range(frames):
        feed = {
            cp.PAST_HIDDEN: rng.standard_normal((1, hidden)).astype(np.float32),
            cp.CODE0: rng.integers(0, 100, 1).astype(np.int64),
            cp.NOISE: np.maximum(rng.random((1, steps, vocab), dtype=np.float32), 1e-38),
            cp.TEMPERATURE: np.array([0.9], np.float32),
            cp.TOP_K: np.array([top_k], np.int64),
            cp.TOP_P: np.array([1.0], np.float32),
            **switch_feed(compiled),
        }
        before = live()
        logits = request.infer(feed)[cp.LOGITS][0]  # [steps, vocab], raw: what exact_topk sorts
        if live() - before > 32768:
            rises.append((frame, live() - before))
        for step in range(steps):
            if step not in first_tie and _tied(logits[step], top_k):
                first_tie[step] = frame
    print(f"{frames} frames: infers after which live memory rose > 32 KiB (frame, bytes): {rises}")
    print("first tie per step (step, frame):", sorted(first_tie.items(), key=lambda kv: kv[1]))


def _tied(row: np.ndarray, k: int) -> bool:
    """exact_topk's condition: equal values among the top k, or another value equal to the k-th."""
    top = np.sort(row)[::-1][:k]
    return bool((top[1:] == top[:-1]).any() or (row >= top[-1]).sum() > k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["topk", "bundle"])
    parser.add_argument("bundle_dir", type=Path, nargs="?")
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--as-loaded", action="store_true", help="bundle: the graph as the daemon loads it")
    args = parser.parse_args()
    if args.what == "topk":
        topk()
    else:
        bundle(args.bundle_dir, args.frames, args.as_loaded)


if __name__ == "__main__":
    main()
