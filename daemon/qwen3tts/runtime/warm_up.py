"""One throw-away inference per graph at load, then its weight file's pages go back (weight_pages.py).

The CPU plugin repacks compressed weights on a graph's first inference, reading the whole mapped
`.bin` to do so. Doing that at load, one graph at a time, and releasing the file's pages right after,
keeps the load's peak at one graph's file plus the copies, instead of every file plus every copy;
and the first request no longer pays for the repacking. The talker's prefills of 8-127 positions pack a
second copy from the file (measured: 0.6B INT8, AVX2), so the runner's own talker runs every kind
of step once more when it is built, and its file's pages are released again after that
(runtime/talker_reserve.py). The code predictor gets one more frame before its own, forcing its tie
fallbacks (runtime/tie_fallback.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model.graphs import code_predictor as cp_names
from qwen3tts.model.spec import CodePredictorSpec
from qwen3tts.runtime.devices import DevicePlan, base_device
from qwen3tts.runtime.paged_talker import PagedTalker
from qwen3tts.runtime.tie_fallback import FORCE_TIE_FALLBACK, has_fallback_switch, switch_feed
from qwen3tts.runtime.weight_pages import release_file_pages
from qwen3tts.settings import EngineSettings

log = logging.getLogger(__name__)


def warm_up_talker(compiled_talker: ov.CompiledModel, hidden_size: int) -> None:
    """One position through a one-block KV cache of its own (freed on return)."""
    talker = PagedTalker(compiled_talker, num_blocks=1)
    talker.step([(np.zeros((1, hidden_size), dtype=np.float32), 0, [0])])


def warm_up_code_predictor(
    compiled: ov.CompiledModel,
    spec: CodePredictorSpec,
    talker_hidden: int,
    engine: EngineSettings | None = None,
) -> str | None:
    """One greedy frame for one sequence; first, where the loader added the tie fallbacks' switch
    (runtime/tie_fallback.py), one frame of the engine's largest batch with its sampling settings and every
    fallback forced: the plugin then gives the sampler's bodies their memory for the largest batch and
    top-k the daemon runs (both fixed by the settings) now, not at ties later. Returns a note for the
    warm-up's log line (None: nothing forced)."""
    request = compiled.create_infer_request()
    note = None
    if has_fallback_switch(compiled):
        engine = engine or EngineSettings()
        rows, sampling = engine.max_num_seqs, _sampling(engine)
        request.infer(_frame(spec, talker_hidden, rows, *sampling) | {FORCE_TIE_FALLBACK: np.array(True)})
        note = f"tie fallbacks forced for one frame of {rows}"
    request.infer(_frame(spec, talker_hidden, 1, 0.0, 1, 1.0) | switch_feed(compiled))
    return note


def _sampling(engine: EngineSettings) -> tuple[float, int, float]:
    return engine.subtalker_temperature, engine.subtalker_top_k, engine.subtalker_top_p


def _frame(spec: CodePredictorSpec, hidden: int, rows: int, temperature: float, top_k: int, top_p: float):
    return {
        cp_names.PAST_HIDDEN: np.zeros((rows, hidden), dtype=np.float32),
        cp_names.CODE0: np.zeros(rows, dtype=np.int64),
        cp_names.NOISE: np.full((rows, spec.num_code_groups - 1, spec.vocab_size), 0.5, dtype=np.float32),
        cp_names.TEMPERATURE: np.full(rows, temperature, dtype=np.float32),
        cp_names.TOP_K: np.full(rows, top_k, dtype=np.int64),
        cp_names.TOP_P: np.full(rows, top_p, dtype=np.float32),
    }


def settle(component: str, weight_files: Sequence[Path], warm_up: Callable[[], str | None]) -> int:
    """Run `warm_up`, then release the pages of `weight_files` (files or directories such as the
    compile cache, whose blobs hold the weights when a graph was loaded from there); returns bytes. What
    `warm_up` returns (a note, or None) goes into the one log line."""
    note = warm_up()
    released = sum(release_file_pages(path) for path in weight_files)
    detail = f" ({note})" if note else ""
    log.info("%s: warmed up%s, released %.0f MiB of weight file pages", component, detail, released / 2**20)
    return released


def settle_on_cpu(plan: DevicePlan, component: str, weight_files: list[Path], warm_up) -> int:
    """Warm a CPU-placed graph up and release its weight file's pages (`settle`).

    Other plugins copy the weights to their device at compile; their files are not ours to judge. The
    native op reads its INT8 weights from the mapped file at every step: those pages fault back in at
    the first steps (from the page cache), the rest (tables read at compile, a copy a compile-cache
    blob duplicates) stay out.
    """
    if base_device(plan.device(component)) != "CPU":
        return 0
    return settle(component, weight_files, warm_up)
