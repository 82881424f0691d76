"""OVRunner: the engine's Runner (engine/runner.py) on compiled OpenVINO graphs.

Per engine step: one paged talker infer over every scheduled chunk, one batched code-predictor infer
over every sequence that gets a frame, and codec chunks per stream. Nothing here schedules: block
tables come in from the engine's block manager.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import openvino as ov

from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.model.graphs import code_predictor as cp_names
from qwen3tts.model.spec import ModelSpec
from qwen3tts.runtime.codec import CodecChunkModels, StreamingCodec, StreamStart
from qwen3tts.runtime.native_decode.predictor import NativeCodePredictor
from qwen3tts.runtime.native_decode.talker import NativeTalker
from qwen3tts.runtime.paged_talker import KEY_CACHE, VALUE_CACHE, PagedTalker
from qwen3tts.runtime.talker_reserve import reserve, reserve_shapes
from qwen3tts.runtime.tie_fallback import switch_feed

log = logging.getLogger(__name__)

# Codec stream starts kept after a context, one per recently used ICL voice: ~5 MB each with the
# release codec (mostly the attention window), against a codec pass over the reference per request.
CONTEXT_STARTS = 4


@dataclass(frozen=True)
class CodePredictorRoute:
    """Both code-predictor paths: the fused frame for batches of up to `up_to` rows, the graph above
    (runtime/native_plan.py's FUSED_FASTER_UP_TO says why a frame has a batch limit)."""

    fused: NativeCodePredictor
    graph: ov.CompiledModel
    up_to: int


def kv_bytes_per_block(compiled_talker: ov.CompiledModel) -> int:
    """Bytes one KV block takes across all layers, from the compiled cache shapes (precision-aware)."""
    total = 0
    for port in compiled_talker.inputs:
        if port.get_any_name().startswith((KEY_CACHE, VALUE_CACHE)):
            dims = [d.get_length() for d in list(port.get_partial_shape())[1:]]
            total += math.prod(dims) * port.get_element_type().size
    return total


def kv_block_size(compiled_talker: ov.CompiledModel) -> int:
    """Positions per block: axis 2 of the compiled value cache [blocks, kv_heads, block_size, ...]."""
    port = next(p for p in compiled_talker.inputs if p.get_any_name().startswith(VALUE_CACHE))
    return list(port.get_partial_shape())[2].get_length()


class OVRunner:
    """Implements engine.runner.Runner."""

    def __init__(
        self,
        spec: ModelSpec,
        talker: ov.CompiledModel | NativeTalker,
        code_predictor: ov.CompiledModel | NativeCodePredictor | CodePredictorRoute,
        codec: CodecChunkModels,
        num_kv_blocks: int,
    ):
        self.spec = spec
        # the native talker (runtime/native_decode/talker.py, its own KV cache of num_kv_blocks blocks), or
        # the plugin's paged talker
        self._native_talker = talker if isinstance(talker, NativeTalker) else None
        self._talker = self._native_talker or PagedTalker(talker, num_kv_blocks)
        self.talker_path = (
            f"fused native {talker.isa}" if self._native_talker else "plugin"
        )  # as DevicePlan says
        # the plugin's graph, the fused native frame (runtime/native_decode/), or both by batch size; asked
        # of the native side, since a compiled graph may come wrapped (the bench's recording proxy)
        fused, graph, self._fused_up_to = _paths(code_predictor)
        self._fused_code_predictor = fused
        self._code_predictor = graph.create_infer_request() if graph is not None else None
        # every real inference leaves the tie fallbacks to the ties (the warm-up alone forces them)
        self._code_predictor_switch = switch_feed(graph) if graph is not None else {}
        self.code_predictor_path = _path_name(fused, self._fused_up_to)  # as DevicePlan says
        self.codec_models = codec
        self._streams: dict[int, StreamingCodec] = {}
        self._context_starts: OrderedDict[bytes, StreamStart] = OrderedDict()  # least recent first
        self.block_size = self._talker.block_size
        self.num_kv_blocks = self._native_talker.num_blocks if self._native_talker else num_kv_blocks
        self.kv_cache_bytes = self._talker.cache_bytes
        self.hidden_size = spec.talker.hidden_size
        self.vocab_size = spec.talker.vocab_size
        self.codebook_size = spec.code_predictor.vocab_size
        self.eos_token_id = spec.codec_ids.eos
        self.samples_per_frame = spec.codec.decode_upsample_rate

    @property
    def fused_code_predictor(self) -> NativeCodePredictor | None:
        """The fused native frame the code predictor runs on, or None (the plugin's graph)."""
        return self._fused_code_predictor

    def reserve_talker_memory(self, max_num_seqs: int, max_num_batched_tokens: int, max_frames: int) -> str:
        """The plugin talker's buffers for every kind of step these limits allow, taken now
        (runtime/talker_reserve.py); a note for the log. The native talker's buffers are fixed: no call."""
        if self._native_talker is not None:
            raise TypeError("the native talker has no plugin buffers to reserve")
        steps = reserve_shapes(
            max_num_seqs, max_num_batched_tokens, max_frames, self.num_kv_blocks, self.block_size
        )
        return reserve(self._talker, self.hidden_size, steps)

    def talker(self, chunks: Sequence[TalkerChunk]) -> tuple[np.ndarray, np.ndarray]:
        if self._native_talker is not None:
            return self._native_talker.talker(chunks)
        return self._talker.step([(c.embeddings, c.past_len, c.block_table) for c in chunks])

    def code_predictor(
        self, hidden, code0, noise, temperature, top_k, top_p
    ) -> tuple[np.ndarray, np.ndarray]:
        fused = self._fused_code_predictor
        if fused is not None and (self._fused_up_to is None or len(hidden) <= self._fused_up_to):
            return fused.frame(hidden, code0, noise, temperature, top_k, top_p)
        feed = {
            cp_names.PAST_HIDDEN: np.ascontiguousarray(hidden, dtype=np.float32),
            cp_names.CODE0: np.ascontiguousarray(code0, dtype=np.int64),
            cp_names.NOISE: np.ascontiguousarray(noise, dtype=np.float32),
            cp_names.TEMPERATURE: np.ascontiguousarray(temperature, dtype=np.float32),
            cp_names.TOP_K: np.ascontiguousarray(top_k, dtype=np.int64),
            cp_names.TOP_P: np.ascontiguousarray(top_p, dtype=np.float32),
            **self._code_predictor_switch,
        }
        result = self._code_predictor.infer(feed)
        codes = result[cp_names.CODES].astype(np.int64, copy=True)
        next_embed = np.array(result[cp_names.NEXT_EMBED], dtype=np.float32, copy=True)
        return codes, next_embed

    def codec_open(self, seq_id: int, context: np.ndarray | None = None) -> None:
        if context is None:
            self._streams[seq_id] = StreamingCodec(self.codec_models)
            return
        context = np.asarray(context, dtype=np.int64)
        key = hashlib.blake2b(repr(context.shape).encode() + context.tobytes(), digest_size=16).digest()
        start = self._context_starts.get(key)
        if start is None:  # decode the context once; later requests with it resume after it
            log.debug("codec stream %d: decoding a new context of %d frames", seq_id, len(context))
            start = StreamingCodec(self.codec_models, context).snapshot()
            self._context_starts[key] = start
            if len(self._context_starts) > CONTEXT_STARTS:
                self._context_starts.popitem(last=False)
        self._context_starts.move_to_end(key)
        self._streams[seq_id] = StreamingCodec.resume(self.codec_models, start)

    def codec_decode(self, seq_id: int, frames: np.ndarray, final: bool = False) -> np.ndarray:
        stream = self._streams[seq_id]
        pcm = stream.decode(np.asarray(frames, dtype=np.int64))
        if final:  # pad the last partial chunk; the stream ends here, so its state may go
            pcm = np.concatenate([pcm, stream.flush()])
        return pcm

    def codec_close(self, seq_id: int) -> None:
        self._streams.pop(seq_id, None)


def _paths(code_predictor) -> tuple[NativeCodePredictor | None, ov.CompiledModel | None, int | None]:
    """(fused frame, graph, the largest batch the frame takes or None for every batch)."""
    if isinstance(code_predictor, CodePredictorRoute):
        return code_predictor.fused, code_predictor.graph, code_predictor.up_to
    if isinstance(code_predictor, NativeCodePredictor):
        return code_predictor, None, None
    return None, code_predictor, None


def _path_name(fused: NativeCodePredictor | None, up_to: int | None) -> str:
    if fused is None:
        return "plugin"
    return f"fused native {fused.isa}" + ("" if up_to is None else f" up to batch {up_to}, plugin above")
