"""Build the fused native code predictor from a loaded bundle's graph, or say why not."""

from __future__ import annotations

import logging
import os

import numpy as np
import openvino as ov

from qwen3tts.model.spec import CodePredictorSpec
from qwen3tts.runtime.native import NativeLibrary
from qwen3tts.runtime.native_decode.predictor import NativeCodePredictor, declare
from qwen3tts.runtime.native_decode.tensors import UnreadableTensors, read_tensors

log = logging.getLogger(__name__)


def default_threads(num_threads: int) -> int:
    """The pool's size: `devices.num_threads` if set, else the CPUs this process may run on."""
    return num_threads if num_threads > 0 else len(os.sched_getaffinity(0))


def fused_code_predictor(
    library: NativeLibrary, model: ov.Model, spec: CodePredictorSpec, threads: int
) -> NativeCodePredictor:
    """A predictor over `model`'s tensors (kept alive with it); UnreadableTensors says why it cannot be.

    One warm-up frame runs here, so that a tensor the library cannot read fails now, not in a request.
    """
    if not declare(library.cdll):
        raise UnreadableTensors(f"{library.path} has no fused code predictor (rebuild native/)")
    predictor = NativeCodePredictor.build(
        library.cdll, spec, read_tensors(model, spec), library.isa, threads, keep=(model,)
    )
    _warm_up(predictor, spec)
    return predictor


def _warm_up(predictor: NativeCodePredictor, spec: CodePredictorSpec) -> None:
    steps, vocab = spec.num_code_groups - 1, spec.vocab_size
    predictor.frame(
        np.zeros((1, spec.input_size), np.float32),
        np.zeros(1, np.int64),
        np.full((1, steps, vocab), 0.5, np.float32),
        np.zeros(1, np.float32),
        np.zeros(1, np.int64),
        np.ones(1, np.float32),
    )
