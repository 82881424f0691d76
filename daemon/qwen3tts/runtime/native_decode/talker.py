"""The native talker (native/src/talker.hpp) through its C entry: one call per engine talker step.

It owns its KV cache ([blocks, layers, 2, kv_heads, BLOCK_SIZE] rows of one position and KV head: u8 with a
scale and zero point per row, as engine.kv_cache_precision's default and the plugin's, or IEEE half; the
engine's block tables index the first axis) and does prefill chunks and decode rows alike, so the plugin's
compiled talker is not needed when it runs. `NativeTalker.talker` has the contract of Runner.talker
(engine/runner.py). Opt-in: devices.native_talker (settings/engine.py); build_native_talker builds one
for the loader.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence

import numpy as np
import openvino as ov

from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.model.spec import TalkerSpec
from qwen3tts.runtime.native import NativeLibrary
from qwen3tts.runtime.native_decode.predictor import _contiguous, _refused
from qwen3tts.runtime.native_decode.talker_tensors import TalkerTensors, read_talker_tensors
from qwen3tts.runtime.native_decode.tensors import Int8Weights, UnreadableTensors

# Positions per KV block of the native cache: the plugin's U8 cache uses 32 too, so the engine's block
# accounting (and the prefix cache's granularity) is the same on either path.
BLOCK_SIZE = 32

_MATRIX_KINDS = {"qkv": 0, "o": 1, "gate_up": 2, "down": 3, "head": 4}
_VECTOR_KINDS = {"input": 0, "post": 1, "q": 2, "k": 3, "final": 4, "inverse_frequencies": 5}


def cache_precision(kv_cache_precision: str) -> str:
    """The native cache's element type for engine.kv_cache_precision: u8 as asked, else f16 (the native
    talker has no bf16 or f32 cache; f16 is the nearer to either)."""
    return "u8" if kv_cache_precision == "u8" else "f16"


def kv_bytes_per_block(spec: TalkerSpec, precision: str, block_size: int = BLOCK_SIZE) -> int:
    """Bytes one native KV block takes across all layers (keys and values): per position and KV head a
    row of head_dim halves, or head_dim bytes after its f32 scale and zero point (native/src/talker.hpp)."""
    row = spec.head_dim + 8 if precision == "u8" else 2 * spec.head_dim
    return spec.num_hidden_layers * 2 * block_size * spec.num_key_value_heads * row


def declare(cdll: ctypes.CDLL) -> bool:
    """Declare the talker's C functions on `cdll`; False if the library predates them."""
    if not hasattr(cdll, "qwen3tts_talker_cache_u8"):  # (a library from before the u8 cache)
        return False
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    signatures = {
        "qwen3tts_talker_create": (p, [p, ctypes.c_float, ctypes.c_char_p, i32, i32]),
        "qwen3tts_talker_destroy": (None, [p]),
        "qwen3tts_talker_isa": (ctypes.c_char_p, [p]),
        "qwen3tts_talker_threads": (i32, [p]),
        "qwen3tts_talker_cache_bytes": (i64, [p]),
        "qwen3tts_talker_cache_u8": (i32, [p]),
        "qwen3tts_talker_set_matrix": (i32, [p, i32, i64, p, p, i64, i64]),
        "qwen3tts_talker_set_vector": (i32, [p, i32, i64, p, i64]),
        "qwen3tts_talker_check": (i32, [p]),
        "qwen3tts_talker_message": (ctypes.c_char_p, [p]),
        "qwen3tts_talker_step": (i32, [p, i64, p, p, p, p, p, p, p]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(cdll, name)
        function.restype, function.argtypes = result, arguments
    return True


def build_native_talker(
    library: NativeLibrary,
    model: ov.Model,
    spec: TalkerSpec,
    num_blocks: int,
    threads: int,
    cache: str = "u8",
) -> NativeTalker:
    """A native talker over `model`'s tensors (the bundle's talker IR, kept alive with it) with a cache of
    `num_blocks` blocks of `cache` ("u8" or "f16") rows; UnreadableTensors says why it cannot be. One warm-up
    step runs here (block 0)."""
    if not declare(library.cdll):
        raise UnreadableTensors(f"{library.path} has no native talker with a u8 cache (rebuild native/)")
    tensors = read_talker_tensors(model, spec)
    talker = NativeTalker.build(
        library.cdll, spec, tensors, library.isa, threads, num_blocks, cache, keep=(model,)
    )
    talker.talker([TalkerChunk(0, np.zeros((1, spec.hidden_size), np.float32), 0, [0])])
    return talker


class NativeTalker:
    """One talker object in the library, with its KV cache; the tensors it points into are kept alive."""

    def __init__(self, cdll: ctypes.CDLL, handle: int, spec: TalkerSpec, num_blocks: int, keep: tuple):
        self._cdll, self._handle, self.spec, self._keep = cdll, handle, spec, keep
        self.isa = cdll.qwen3tts_talker_isa(handle).decode()
        self.threads = cdll.qwen3tts_talker_threads(handle)
        self.cache_bytes = cdll.qwen3tts_talker_cache_bytes(handle)
        self.cache_precision = "u8" if cdll.qwen3tts_talker_cache_u8(handle) else "f16"
        self.block_size, self.num_blocks = BLOCK_SIZE, num_blocks
        self._lock = threading.Lock()  # one step at a time: the cache and buffers are its own

    @classmethod
    def build(
        cls, cdll, spec: TalkerSpec, tensors: TalkerTensors, isa: str, threads: int, num_blocks: int,
        cache: str = "u8", keep=(),
    ) -> NativeTalker:  # fmt: skip
        """A checked talker over `tensors`; UnreadableTensors if the library refuses them or the cache."""
        if cache not in ("u8", "f16"):
            raise ValueError(f"the native talker's cache is u8 or f16, not {cache!r}")
        dims = (ctypes.c_int64 * 9)(
            spec.hidden_size,
            spec.intermediate_size,
            spec.num_hidden_layers,
            spec.num_attention_heads,
            spec.num_key_value_heads,
            spec.head_dim,
            spec.vocab_size,
            num_blocks,
            BLOCK_SIZE,
        )
        handle = cdll.qwen3tts_talker_create(dims, spec.rms_norm_eps, isa.encode(), threads, cache == "u8")
        if not handle:
            raise UnreadableTensors(
                f"the library cannot build a talker for kernel set {isa}, this shape and {num_blocks} blocks"
            )
        talker = cls(cdll, handle, spec, num_blocks, (tensors, *keep))
        talker._hand_over(tensors)
        if cdll.qwen3tts_talker_check(handle) != 0:
            raise UnreadableTensors(cdll.qwen3tts_talker_message(handle).decode())
        return talker

    def _hand_over(self, t: TalkerTensors) -> None:
        for i, (matrices, norms) in enumerate(zip(t.layers, t.norms, strict=True)):
            for key, weights in matrices.items():
                self._matrix(key, i, weights)
            for key, gain in norms.items():
                self._vector(key, i, gain)
        self._matrix("head", 0, t.head)
        self._vector("final", 0, t.final_norm)
        self._vector("inverse_frequencies", 0, t.inverse_frequencies)

    def _matrix(self, kind: str, index: int, weights: Int8Weights) -> None:
        data, scale = _contiguous(weights.data, np.int8), _contiguous(weights.scale, np.float32)
        status = self._cdll.qwen3tts_talker_set_matrix(
            self._handle, _MATRIX_KINDS[kind], index, data.ctypes.data, scale.ctypes.data, *data.shape
        )
        _refused(status, f"{kind} matrix {index}")

    def _vector(self, kind: str, index: int, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        status = self._cdll.qwen3tts_talker_set_vector(
            self._handle, _VECTOR_KINDS[kind], index, values.ctypes.data, values.size
        )
        _refused(status, f"{kind} vector {index}")

    def talker(self, chunks: Sequence[TalkerChunk]) -> tuple[np.ndarray, np.ndarray]:
        """(logits (N, vocab), hidden (N, H)) at each chunk's last position: Runner.talker. A bad chunk
        (a block id out of range, a table too short, no positions) raises ValueError, nothing written."""
        if not chunks:
            raise ValueError("a talker step needs at least one chunk")
        hidden_size = self.spec.hidden_size
        for c in chunks:
            if c.embeddings.ndim != 2 or c.embeddings.shape[1] != hidden_size:
                shape = c.embeddings.shape
                raise ValueError(f"sequence {c.seq_id}: embeddings {shape}, expected (n, {hidden_size})")
        counts = np.array([c.embeddings.shape[0] for c in chunks], dtype=np.int64)
        pasts = np.array([c.past_len for c in chunks], dtype=np.int64)
        tables = [np.asarray(c.block_table, dtype=np.int64).reshape(-1) for c in chunks]
        begins = np.concatenate([[0], np.cumsum([len(t) for t in tables])]).astype(np.int64)
        joined = np.concatenate(tables) if begins[-1] else np.zeros(0, np.int64)
        if joined.size and (joined.min() < -(2**31) or joined.max() >= 2**31):
            raise ValueError(f"block ids outside 0..{self.num_blocks - 1}")
        table_ids = np.ascontiguousarray(joined, dtype=np.int32)
        embeddings = np.ascontiguousarray(np.concatenate([c.embeddings for c in chunks]), dtype=np.float32)
        logits = np.empty((len(chunks), self.spec.vocab_size), dtype=np.float32)
        hidden = np.empty((len(chunks), hidden_size), dtype=np.float32)
        arrays = (counts, pasts, begins, table_ids, embeddings, logits, hidden)
        with self._lock:
            status = self._cdll.qwen3tts_talker_step(
                self._handle, len(chunks), *(a.ctypes.data for a in arrays)
            )
            if status != 0:
                raise ValueError(self._cdll.qwen3tts_talker_message(self._handle).decode())
        return logits, hidden

    def close(self) -> None:
        if self._handle:
            self._cdll.qwen3tts_talker_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()
