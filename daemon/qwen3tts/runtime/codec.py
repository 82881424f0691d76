"""Exact streaming speech decoder: frames of 16 codes in, 24 kHz float32 PCM out.

The codec decoder is strictly causal, so the chunk graphs of `model/graphs/codec.py` carry a small
state (conv tails, the attention window, the frame position) from one chunk to the next and the
concatenated output equals one full decode of all frames, bit for bit up to fp32 rounding.

`CodecChunkModels` holds the compiled graphs, shared by all streams: one frame part for every chunk
size and a static sample part per size (or, from older bundles, one whole static graph per size).
`StreamingCodec` is one stream: its own state and its not-yet-decoded frames.

Partial chunks: a chunk has a static frame count (its sample part's), and running it on padding frames would
write the padding into the carried state. So `decode()` only ever runs full chunks and keeps the
remaining frames pending; `flush()` ends the stream: it pads the pending frames up to the smallest
chunk that holds them, cuts the padding's samples off and discards the (now polluted) state. The
state is therefore exact after every `decode()`, whatever the call sizes.

Chunk choice: as soon as the smallest chunk size is filled, decode; with a backlog, use the largest
chunk that fits. With sizes (4, 12) a stream fed one frame per engine step gets audio every 4 frames
(low latency, first audio after 4 frames); a stream that fell behind catches up in cheaper 12-frame
chunks. Waiting for 12 frames after a 4-frame start would leave a gap whenever frames arrive at
about real time.

Left context: an ICL voice's reference codes go through the stream first (`StreamingCodec(models,
context)`), so the generated frames are decoded with the reference audio before them, as the official
wrapper decodes reference + generated codes in one go. The context's samples are dropped from the
output: exactly `len(context) * samples_per_frame`, which is the official proportional cut
`int(ref / total * total_samples)` up to float rounding (see docs/voices.md). Decoding the context
is a codec pass over all its frames; `snapshot()` keeps the stream's start after it, so a voice used
again resumes there (`StreamingCodec.resume`) instead of decoding its reference again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import openvino as ov

from qwen3tts.model.graphs.codec import (
    AUDIO,
    CODES,
    HIDDEN,
    build_codec_frames,
    build_codec_samples,
)
from qwen3tts.model.graphs.codec_state import PAST_PREFIX, PRESENT_PREFIX
from qwen3tts.model.spec import CodecDecoderSpec

logger = logging.getLogger(__name__)


class CodecChunkModels:
    """The compiled codec graphs of one bundle, shared by all streams; one infer request each.

    Two layouts. Split (bundles since the frame / sample split): ONE frame-part graph with a dynamic
    frame axis (codes -> HIDDEN) and one static sample-part graph per chunk size (HIDDEN -> audio),
    so the frame part's weights, 90 % of the decoder's, are held once. Whole (older bundles): one
    static graph per chunk size, codes -> audio, each with its own copy of every weight.
    """

    def __init__(
        self,
        compiled: Mapping[int, ov.CompiledModel],
        spec: CodecDecoderSpec,
        frames: ov.CompiledModel | None = None,
    ):
        if not compiled:
            raise ValueError("at least one compiled codec chunk model is needed")
        self.spec = spec
        self.chunk_sizes = tuple(sorted(compiled))
        self._chunks = {size: _Part(compiled[size], AUDIO) for size in self.chunk_sizes}
        self._frames = _Part(frames, HIDDEN) if frames is not None else None
        # the state layout is the union of the `past.*` inputs; the chunk sizes share it by construction
        graphs = [compiled[self.chunk_sizes[0]], *([frames] if frames is not None else [])]
        self.state_inputs = {
            port.get_any_name()[len(PAST_PREFIX) :]: (tuple(port.get_shape()), port.get_element_type())
            for graph in graphs
            for port in graph.inputs
            if port.get_any_name().startswith(PAST_PREFIX)
        }

    @classmethod
    def compile(
        cls,
        core: ov.Core,
        spec: CodecDecoderSpec,
        weights: Mapping[str, np.ndarray],
        chunk_sizes: tuple[int, ...] = (1, 12),
        device: str = "CPU",
        properties: Mapping[str, object] | None = None,
    ) -> CodecChunkModels:
        """Build and compile the split layout (frame part + a sample part per size) on `device`."""
        props = dict(properties or {})
        frames = core.compile_model(build_codec_frames(spec, weights), device, props)
        compiled = {
            size: core.compile_model(build_codec_samples(spec, weights, size), device, props)
            for size in chunk_sizes
        }
        logger.info("codec frame part and sample parts %s compiled on %s", list(chunk_sizes), device)
        return cls(compiled, spec, frames)

    def initial_state(self) -> dict[str, np.ndarray]:
        """Zeros for every state tensor: a fresh stream (the official zero left padding)."""
        return {
            name: np.zeros(shape, np.int64 if kind == ov.Type.i64 else np.float32)
            for name, (shape, kind) in self.state_inputs.items()
        }

    def warm_up(self) -> None:
        """One chunk of each size through a fresh stream: the frame part's dynamic shapes allocate and
        repack its weights at their first inference; done at load, that stays out of the first request."""
        state = self.initial_state()
        for size in self.chunk_sizes:
            _, state = self.run(np.zeros((size, self.spec.num_quantizers), np.int64), state)

    def run(
        self, codes: np.ndarray, state: Mapping[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Decode one full chunk: codes [chunk, Q] -> (pcm [chunk * 1920], next state)."""
        chunk = self._chunks[codes.shape[0]]
        feeds = {CODES: codes[None].astype(np.int64, copy=False)}  # [1, chunk, Q]
        next_state = {}
        if self._frames is not None:
            hidden, next_state = self._frames.infer(feeds, state)
            feeds = {HIDDEN: hidden}
        audio, chunk_state = chunk.infer(feeds, state)
        return audio[0].copy(), {**next_state, **chunk_state}


class _Part:
    """One compiled codec graph's infer request and the state entries it reads and writes."""

    def __init__(self, compiled: ov.CompiledModel, output: str):
        self.request = compiled.create_infer_request()
        self.output = output
        self.state_names = [
            port.get_any_name()[len(PAST_PREFIX) :]
            for port in compiled.inputs
            if port.get_any_name().startswith(PAST_PREFIX)
        ]

    def infer(
        self, feeds: dict[str, np.ndarray], state: Mapping[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(its output, its next state entries) for `feeds` plus its share of `state`."""
        feeds.update({PAST_PREFIX + name: state[name] for name in self.state_names})
        self.request.infer(feeds)
        # copies: the request's output buffers are reused by the next stream's chunk
        next_state = {
            name: self.request.get_tensor(PRESENT_PREFIX + name).data.copy() for name in self.state_names
        }
        return self.request.get_tensor(self.output).data, next_state


@dataclass(frozen=True)
class StreamStart:
    """Where a stream stands after its context: carried state, frames not decoded yet, samples to drop.

    Its arrays are read-only; a stream never writes into its state arrays (each chunk returns new
    ones), so any number of streams may resume from one StreamStart.
    """

    state: Mapping[str, np.ndarray]
    pending: np.ndarray
    discard: int


class StreamingCodec:
    """One stream of frames -> PCM; exact at any call sizes (see the module docstring)."""

    def __init__(self, models: CodecChunkModels, context: np.ndarray | None = None):
        self.models = models
        self.samples_per_frame = models.spec.decode_upsample_rate
        self._state = models.initial_state()
        self._pending = np.zeros((0, models.spec.num_quantizers), np.int64)
        self._discard = 0  # samples of context frames not yet dropped from the output
        if context is not None:
            self._discard = len(context) * self.samples_per_frame
            self.decode(context)  # its full chunks run now; the rest runs with the first frames

    @classmethod
    def resume(cls, models: CodecChunkModels, start: StreamStart) -> StreamingCodec:
        """A new stream that continues from `start` (a snapshot of a stream fed the same context)."""
        stream = cls(models)
        stream._state = dict(start.state)
        stream._pending = start.pending
        stream._discard = start.discard
        return stream

    def snapshot(self) -> StreamStart:
        """This stream's position, to resume other streams from (e.g. right after its context)."""
        for array in (*self._state.values(), self._pending):
            array.flags.writeable = False
        return StreamStart(dict(self._state), self._pending, self._discard)

    @property
    def pending_frames(self) -> int:
        """Frames received but not decoded yet (fewer than the smallest chunk after `decode()`)."""
        return self._pending.shape[0]

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Append frames codes [n, Q]; return the PCM of every full chunk now available (maybe empty)."""
        self._pending = np.concatenate([self._pending, self._validated(codes)], 0)
        sizes = self.models.chunk_sizes
        pieces = []
        while self.pending_frames >= sizes[0]:
            size = max(s for s in sizes if s <= self.pending_frames)
            pcm, self._state = self.models.run(self._pending[:size], self._state)
            pieces.append(pcm)
            self._pending = self._pending[size:]
        return self._without_context(np.concatenate(pieces) if pieces else np.zeros(0, np.float32))

    def flush(self) -> np.ndarray:
        """End the stream: decode the pending frames (padded to a chunk, padding cut) and reset."""
        count = self.pending_frames
        pcm = np.zeros(0, np.float32)
        if count:
            size = min(s for s in self.models.chunk_sizes if s >= count)
            padded = np.zeros((size, self._pending.shape[1]), np.int64)
            padded[:count] = self._pending
            pcm, _ = self.models.run(padded, self._state)  # the padded state is thrown away
            pcm = self._without_context(pcm[: count * self.samples_per_frame])
        self.reset()
        return pcm

    def reset(self) -> None:
        """Forget all state, pending frames and context: the next `decode()` starts a new stream."""
        self._state = self.models.initial_state()
        self._pending = self._pending[:0]
        self._discard = 0

    def _without_context(self, pcm: np.ndarray) -> np.ndarray:
        drop = min(self._discard, pcm.shape[0])
        self._discard -= drop
        return pcm[drop:]

    def _validated(self, codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes)
        spec = self.models.spec
        if (
            codes.ndim != 2
            or codes.shape[1] != spec.num_quantizers
            or not np.issubdtype(codes.dtype, np.integer)
        ):
            raise ValueError(
                f"codes must be integer [n, {spec.num_quantizers}], got {codes.dtype} {codes.shape}"
            )
        if codes.size and (codes.min() < 0 or codes.max() >= spec.codebook_size):
            raise ValueError(f"codes must lie in [0, {spec.codebook_size}), got {codes.min()}..{codes.max()}")
        return codes.astype(np.int64, copy=False)
