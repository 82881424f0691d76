"""One throw-away inference per graph at load, then its weight file's pages go back (weight_pages.py).

The CPU plugin repacks compressed weights on a graph's first inference, reading the whole mapped
`.bin` to do so. Doing that at load, one graph at a time, and releasing the file's pages right after,
keeps the load's peak at one graph's file plus the copies, instead of every file plus every copy;
and the first request no longer pays for the repacking. Later shapes (more rows, longer prefills)
reuse the packed copy: measured, nothing faults back in (docs/benchmarks.md, issue 16 memory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model.graphs import code_predictor as cp_names
from qwen3tts.model.spec import CodePredictorSpec
from qwen3tts.runtime.paged_talker import PagedTalker
from qwen3tts.runtime.weight_pages import release_file_pages

log = logging.getLogger(__name__)


def warm_up_talker(compiled_talker: ov.CompiledModel, hidden_size: int) -> None:
    """One position through a one-block KV cache of its own (freed on return)."""
    talker = PagedTalker(compiled_talker, num_blocks=1)
    talker.step([(np.zeros((1, hidden_size), dtype=np.float32), 0, [0])])


def warm_up_code_predictor(compiled: ov.CompiledModel, spec: CodePredictorSpec, talker_hidden: int) -> None:
    """One greedy frame for one sequence."""
    feed = {
        cp_names.PAST_HIDDEN: np.zeros((1, talker_hidden), dtype=np.float32),
        cp_names.CODE0: np.zeros(1, dtype=np.int64),
        cp_names.NOISE: np.full((1, spec.num_code_groups - 1, spec.vocab_size), 0.5, dtype=np.float32),
        cp_names.TEMPERATURE: np.zeros(1, dtype=np.float32),
        cp_names.TOP_K: np.ones(1, dtype=np.int64),
        cp_names.TOP_P: np.ones(1, dtype=np.float32),
    }
    compiled.create_infer_request().infer(feed)


def settle(component: str, weight_files: Sequence[Path], warm_up: Callable[[], None]) -> int:
    """Run `warm_up`, then release the pages of `weight_files` (files or directories such as the
    compile cache, whose blobs hold the weights when a graph was loaded from there); returns bytes."""
    warm_up()
    released = sum(release_file_pages(path) for path in weight_files)
    log.info("%s: warmed up, released %.0f MiB of weight file pages", component, released / 2**20)
    return released
