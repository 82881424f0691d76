"""The fused native code predictor (native/src/predictor.hpp) through its C entry: one call per frame.

`NativeCodePredictor.build` hands the library the bundle's tensors (tensors.py): pointers to the mapped
INT8 or INT4 matrices and f16 tables, copies of the small f32 vectors and scales. The predictor object
holds a persistent thread pool; `frame` has the contract of Runner.code_predictor (engine/runner.py).
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from qwen3tts.model.spec import CodePredictorSpec
from qwen3tts.runtime.native_decode.tensors import (
    Int4Weights,
    PredictorTensors,
    UnreadableTensors,
    Weights,
)

_MATRIX_KINDS = {"qkv": 0, "o": 1, "gate_up": 2, "down": 3, "head": 4, "projection": 5}
_VECTOR_KINDS = {"input": 0, "post": 1, "q": 2, "k": 3, "final": 4, "inverse_frequencies": 5, "bias": 6}


def declare(cdll: ctypes.CDLL) -> bool:
    """Declare the predictor's C functions on `cdll`; False if the library predates them."""
    if not hasattr(cdll, "qwen3tts_cp_frame"):
        return False
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    signatures = {
        "qwen3tts_cp_create": (p, [p, ctypes.c_float, ctypes.c_char_p, i32]),
        "qwen3tts_cp_destroy": (None, [p]),
        "qwen3tts_cp_isa": (ctypes.c_char_p, [p]),
        "qwen3tts_cp_threads": (i32, [p]),
        "qwen3tts_cp_set_matrix": (i32, [p, i32, i64, p, p, i64, i64]),
        "qwen3tts_cp_set_vector": (i32, [p, i32, i64, p, i64]),
        "qwen3tts_cp_set_table": (i32, [p, i64, p, i64, i64]),
        "qwen3tts_cp_check": (i32, [p]),
        "qwen3tts_cp_message": (ctypes.c_char_p, [p]),
        "qwen3tts_cp_frame": (i32, [p, i64, p, p, p, p, p, p, p, p, p]),
    }
    if hasattr(cdll, "qwen3tts_cp_set_matrix4"):  # INT4 matrices (a library before them reads INT8 only)
        signatures["qwen3tts_cp_set_matrix4"] = (i32, [p, i32, i64, p, p, i64, i64, i64])
    for name, (result, arguments) in signatures.items():
        function = getattr(cdll, name)
        function.restype, function.argtypes = result, arguments
    return True


class NativeCodePredictor:
    """One predictor object in the library: the tensors it points into are kept alive with it."""

    def __init__(self, cdll: ctypes.CDLL, handle: int, spec: CodePredictorSpec, keep: tuple):
        self._cdll, self._handle, self.spec, self._keep = cdll, handle, spec, keep
        self.isa = cdll.qwen3tts_cp_isa(handle).decode()
        self.threads = cdll.qwen3tts_cp_threads(handle)
        self.steps = spec.num_code_groups - 1
        self.mapped_weight_bytes = 0  # of the bundle's file, read in place at every frame (build sets it)
        self._lock = threading.Lock()  # one frame at a time: the predictor's buffers are its own

    @classmethod
    def build(
        cls,
        cdll: ctypes.CDLL,
        spec: CodePredictorSpec,
        tensors: PredictorTensors,
        isa: str,
        threads: int,
        keep=(),
    ) -> NativeCodePredictor:
        """A checked predictor over `tensors`; UnreadableTensors if the library refuses them. `keep`: objects
        that own the tensors' memory (the ov.Model read from the bundle)."""
        talker_vocab = tensors.talker_embedding.shape[0]
        dims = (ctypes.c_int64 * 10)(
            spec.hidden_size,
            spec.intermediate_size,
            spec.num_hidden_layers,
            spec.num_attention_heads,
            spec.num_key_value_heads,
            spec.head_dim,
            spec.vocab_size,
            spec.num_code_groups - 1,
            spec.input_size,
            talker_vocab,
        )
        handle = cdll.qwen3tts_cp_create(dims, spec.rms_norm_eps, isa.encode(), threads)
        if not handle:
            raise UnreadableTensors(
                f"the library cannot build a predictor for kernel set {isa} and this shape"
            )
        predictor = cls(cdll, handle, spec, (tensors, *keep))
        predictor.mapped_weight_bytes = tensors.mapped_bytes()
        predictor._hand_over(tensors)
        if cdll.qwen3tts_cp_check(handle) != 0:
            raise UnreadableTensors(cdll.qwen3tts_cp_message(handle).decode())
        return predictor

    def _hand_over(self, t: PredictorTensors) -> None:
        for i, (matrices, norms) in enumerate(zip(t.layers, t.norms, strict=True)):
            for key, weights in matrices.items():
                self._matrix(key, i, weights)
            for key, gain in norms.items():
                self._vector(key, i, gain)
        for j, head in enumerate(t.heads):
            self._matrix("head", j, head)
        self._vector("final", 0, t.final_norm)
        self._vector("inverse_frequencies", 0, t.inverse_frequencies)
        if t.projection is not None:
            self._matrix("projection", 0, t.projection)
            self._vector("bias", 0, t.projection_bias)
        for index, table in [(-1, t.talker_embedding), *enumerate(t.code_embeddings)]:
            table = _contiguous(table, np.float16)
            status = self._cdll.qwen3tts_cp_set_table(self._handle, index, table.ctypes.data, *table.shape)
            _refused(status, f"embedding table {index}")

    def _matrix(self, kind: str, index: int, weights: Weights) -> None:
        if isinstance(weights, Int4Weights):
            return self._matrix4(kind, index, weights)
        data, scale = _contiguous(weights.data, np.int8), _contiguous(weights.scale, np.float32)
        status = self._cdll.qwen3tts_cp_set_matrix(
            self._handle, _MATRIX_KINDS[kind], index, data.ctypes.data, scale.ctypes.data, *data.shape
        )
        _refused(status, f"{kind} matrix {index}")

    def _matrix4(self, kind: str, index: int, weights: Int4Weights) -> None:
        if not hasattr(self._cdll, "qwen3tts_cp_set_matrix4"):
            raise UnreadableTensors(
                f"the {kind} matrix {index} is INT4 and the library reads INT8 only (rebuild native/)"
            )
        data, scale = _contiguous(weights.data, np.uint8), _contiguous(weights.scale, np.float32)
        rows, cols = data.shape[0], weights.cols
        status = self._cdll.qwen3tts_cp_set_matrix4(
            self._handle,
            _MATRIX_KINDS[kind],
            index,
            data.ctypes.data,
            scale.ctypes.data,
            rows,
            cols,
            weights.group,
        )
        _refused(status, f"INT4 {kind} matrix {index} (groups of {weights.group})")

    def _vector(self, kind: str, index: int, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        status = self._cdll.qwen3tts_cp_set_vector(
            self._handle, _VECTOR_KINDS[kind], index, values.ctypes.data, values.size
        )
        _refused(status, f"{kind} vector {index}")

    def frame(
        self, hidden, code0, noise, temperature, top_k, top_p, logits: bool = False
    ) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(codes (N, 15) i64, next_embed (N, H) f32[, logits (N, 15, V) f32]): Runner.code_predictor."""
        hidden = np.ascontiguousarray(hidden, dtype=np.float32)
        rows = hidden.shape[0]
        vocab = self.spec.vocab_size
        inputs = {
            "hidden": (hidden, (rows, self.spec.input_size)),
            "code0": (np.ascontiguousarray(code0, dtype=np.int64), (rows,)),
            "noise": (np.ascontiguousarray(noise, dtype=np.float32), (rows, self.steps, vocab)),
            "temperature": (np.ascontiguousarray(temperature, dtype=np.float32), (rows,)),
            "top_k": (np.ascontiguousarray(top_k, dtype=np.int64), (rows,)),
            "top_p": (np.ascontiguousarray(top_p, dtype=np.float32), (rows,)),
        }
        for name, (array, shape) in inputs.items():
            if array.shape != shape:
                raise ValueError(f"code predictor {name}: shape {array.shape}, expected {shape}")
        codes = np.empty((rows, self.steps), dtype=np.int64)
        next_embed = np.empty((rows, self.spec.input_size), dtype=np.float32)
        all_logits = np.empty((rows, self.steps, vocab), dtype=np.float32) if logits else None
        with self._lock:
            if self._call_frame(rows, inputs, codes, next_embed, all_logits) != 0:
                raise ValueError(self._cdll.qwen3tts_cp_message(self._handle).decode())
        return (codes, next_embed, all_logits) if logits else (codes, next_embed)

    def _call_frame(self, rows, inputs, codes, next_embed, all_logits) -> int:
        return self._cdll.qwen3tts_cp_frame(
            self._handle,
            rows,
            *(array.ctypes.data for array, _ in inputs.values()),
            codes.ctypes.data,
            next_embed.ctypes.data,
            all_logits.ctypes.data if all_logits is not None else None,
        )

    def close(self) -> None:
        if self._handle:
            self._cdll.qwen3tts_cp_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()


def _contiguous(array: np.ndarray, dtype) -> np.ndarray:
    """`array` itself (never a copy: the library keeps the pointer) if it is contiguous and of `dtype`."""
    if array.dtype != dtype or not array.flags.c_contiguous:
        raise UnreadableTensors(
            f"a {array.dtype} tensor of shape {array.shape} is not contiguous {np.dtype(dtype)}"
        )
    return array


def _refused(status: int, what: str) -> None:
    if status != 0:
        raise UnreadableTensors(f"the library refused the {what}")
