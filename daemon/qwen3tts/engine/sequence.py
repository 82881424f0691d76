"""One synthesis request and all of its state while the engine works on it (STYLE habit 3).

Talker positions of a sequence: the prompt rows first, then one row per generated frame (that frame's
summed codec embeddings plus the text-track vector of its step). A position is
"computed" once its K/V sit in the paged cache; after a preemption nothing is computed and every known
position is prefilled again, so the audio continues where it stopped without re-emitting anything.
"""

from __future__ import annotations

import enum
import itertools
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from qwen3tts.engine.config import SamplingParams

NUM_CODE_GROUPS = 16  # codes per frame: code 0 from the talker, codes 1..15 from the code predictor


@dataclass(frozen=True)
class Request:
    """What a caller asks for. Validated at Engine.submit(); the prompt builder reads the text fields."""

    id: str
    text: str
    language: str = "auto"
    speaker: str | None = None
    instruct: str | None = None
    rank: int = 0
    """Order among waiting requests: a higher rank is admitted first (the appliance's PA levels, network
    requests below them); within a rank, first come first served."""
    urgent: bool = False
    """May displace running requests of any rank to start at once, and is never held back by a lowered
    batch limit (the appliance's emergencies)."""
    sampling: Mapping[str, object] = field(default_factory=dict)
    """Overrides of SamplingParams fields, e.g. {"temperature": 0.7}."""
    seed: int | None = None
    """Same seed, same text, same engine build -> same audio. None draws a seed from the OS."""
    greedy: bool = False
    max_frames: int | None = None
    """Cap on sampled code-0 tokens (HF max_new_tokens); None uses EngineConfig.max_frames."""
    first_chunk_frames: int | None = None
    """Frames before the first PCM chunk; None uses EngineConfig.first_chunk_frames. For a consumer that
    can do nothing with less (an AAC encoder's first packet needs 160 ms): no chunk it would only hold."""
    ref_audio: str | None = None
    """Base variant: WAV file whose voice (x-vector) to speak with; None uses the configured voice."""
    non_streaming: bool | None = None
    """Prompt layout: whole text up front (True) or streamed text track (False); None = variant default."""


@dataclass(frozen=True)
class Prompt:
    """The talker input of a request, as the prompt builder (runtime/prompt.py) produces it."""

    embeddings: np.ndarray  # (P, H) f32: text track + codec track summed per position
    trailing_text: np.ndarray  # (T, H) f32: text-track vector added at generation step t < T
    pad_vector: np.ndarray  # (H,) f32: tts_pad, the text-track vector once trailing_text runs out
    codec_context: np.ndarray | None = None
    """(F, 16) i64 codes the codec decodes before the generated ones, their audio discarded: an ICL
    voice's reference codes, as the official wrapper decodes reference + generated and cuts."""

    def __post_init__(self) -> None:
        context = self.codec_context
        if context is None:
            return
        if (
            not isinstance(context, np.ndarray)
            or context.ndim != 2
            or context.shape[1] != NUM_CODE_GROUPS
            or not np.issubdtype(context.dtype, np.integer)
            or (context.size and context.min() < 0)
        ):
            raise ValueError(f"codec context must be non-negative integer codes (F, {NUM_CODE_GROUPS})")


class SequenceStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"  # waiting again, to be recomputed
    FINISHED_STOPPED = "finished_stopped"  # sampled EOS
    FINISHED_LENGTH = "finished_length"  # reached max_frames
    FINISHED_CANCELLED = "finished_cancelled"
    FINISHED_ERROR = "finished_error"

    @property
    def is_finished(self) -> bool:
        return self.name.startswith("FINISHED")


class Sequence:
    """All state of one request: inputs, generated codes, KV blocks, counters, status and output."""

    _ids = itertools.count()

    def __init__(self, request: Request, prompt: Prompt, params: SamplingParams, max_frames: int):
        self.seq_id = next(Sequence._ids)
        self.request = request
        self.params = params
        self.max_frames = max_frames
        self.rank = request.rank
        self.urgent = request.urgent
        self.rng = np.random.default_rng(request.seed)
        self.trailing_text = prompt.trailing_text
        self.pad_vector = prompt.pad_vector
        self.codec_context = prompt.codec_context  # decoded first, its audio never emitted
        self.num_prompt_tokens = prompt.embeddings.shape[0]
        self._inputs = np.array(prompt.embeddings, dtype=np.float32)  # (P + capacity, H), grows
        self._frames = np.zeros((16, NUM_CODE_GROUPS), dtype=np.int64)  # (capacity, 16), grows
        self.num_frames = 0
        self.num_frames_decoded = 0  # frames already turned into PCM
        self.num_computed_tokens = 0
        self.block_table: list[int] = []
        self.block_hashes: list[bytes] = []  # content keys of full blocks (prefix_cache.py), memoised
        self.num_keyed_blocks = 0  # leading blocks of block_table already registered in the prefix cache
        self.status = SequenceStatus.WAITING
        self.arrival_order = self.seq_id
        self.admitted_order = -1  # set by the scheduler at each admission
        self.codec_open = False
        self.cancel_requested = False
        self.error: Exception | None = None
        self.output: queue.SimpleQueue[np.ndarray | None] = queue.SimpleQueue()  # PCM chunks, None = end
        self.done = threading.Event()

    def __repr__(self) -> str:
        return (
            f"Sequence({self.request.id!r}, seq_id={self.seq_id}, {self.status.value}, "
            f"tokens={self.num_computed_tokens}/{self.num_tokens}, frames={self.num_frames})"
        )

    @property
    def num_tokens(self) -> int:
        """Known talker positions: prompt + one per generated frame (the newest not yet computed)."""
        return self.num_prompt_tokens + self.num_frames

    @property
    def num_uncomputed_tokens(self) -> int:
        return self.num_tokens - self.num_computed_tokens

    @property
    def is_finished(self) -> bool:
        return self.status.is_finished

    @property
    def frames(self) -> np.ndarray:
        """(num_frames, 16) int64 codes generated so far (a read-only view)."""
        view = self._frames[: self.num_frames]
        view.flags.writeable = False
        return view

    @property
    def code0_history(self) -> np.ndarray:
        """Code-0 tokens sampled so far: the only ids the repetition penalty sees."""
        return self._frames[: self.num_frames, 0]

    def token_embeddings(self, start: int, stop: int) -> np.ndarray:
        """(stop - start, H) f32 talker inputs of positions [start, stop) (a read-only view)."""
        view = self._inputs[start:stop]
        view.flags.writeable = False
        return view

    def text_vector(self, step: int) -> np.ndarray:
        """(H,) text-track vector of generation step `step`: trailing text, then tts_pad."""
        return self.trailing_text[step] if step < len(self.trailing_text) else self.pad_vector

    def append_frame(self, codes: np.ndarray, next_embed: np.ndarray) -> None:
        """Record a full 16-code frame and the talker input it implies for the next position."""
        if self.num_frames == len(self._frames):
            self._frames = np.concatenate([self._frames, np.zeros_like(self._frames)])
        if self.num_tokens == len(self._inputs):
            grow = max(len(self._inputs) - self.num_prompt_tokens, 16)
            self._inputs = np.concatenate([self._inputs, np.zeros((grow, self._inputs.shape[1]), np.float32)])
        self._inputs[self.num_tokens] = next_embed + self.text_vector(self.num_frames)
        self._frames[self.num_frames] = codes
        self.num_frames += 1


class Handle:
    """Returned by Engine.submit(). Iterate it for 24 kHz float32 PCM chunks as soon as they exist.

    Iteration ends when the request finishes or is cancelled, and raises the request's RequestError
    if it failed. Meant for one consumer thread.
    """

    def __init__(self, seq: Sequence, cancel: Callable[[str], bool]):
        self._seq = seq
        self._cancel = cancel

    @property
    def request_id(self) -> str:
        return self._seq.request.id

    @property
    def seq_id(self) -> int:
        return self._seq.seq_id

    @property
    def status(self) -> SequenceStatus:
        return self._seq.status

    @property
    def error(self) -> Exception | None:
        return self._seq.error

    @property
    def frames(self) -> np.ndarray:
        """(n, 16) int64 codes generated so far; complete once wait() returned True."""
        return self._seq.frames.copy()

    @property
    def cancelled(self) -> bool:
        """Cancel was asked for: the stream ends without its remaining audio (it did not finish)."""
        return self._seq.cancel_requested

    def cancel(self) -> bool:
        """Stop the request within one frame; False if it had already finished."""
        return self._cancel(self.request_id)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the request finished (any way); False on timeout."""
        return self._seq.done.wait(timeout)

    def __iter__(self) -> Iterator[np.ndarray]:
        while True:
            chunk = self._seq.output.get()
            if chunk is None or self._seq.cancel_requested:
                break
            yield chunk
        if self._seq.status is SequenceStatus.FINISHED_ERROR and self._seq.error is not None:
            raise self._seq.error

    def ready_chunks(self) -> tuple[list[np.ndarray], bool]:
        """The PCM chunks already produced, without waiting, and whether the stream has ended.

        For a caller that polls many handles from one loop (the appliance's announcer); raises the
        request's RequestError once it ended in failure. Do not mix with iterating the handle.
        """
        chunks: list[np.ndarray] = []
        while True:
            try:
                chunk = self._seq.output.get_nowait()
            except queue.Empty:
                return chunks, False
            if chunk is None or self._seq.cancel_requested:
                break
            chunks.append(chunk)
        if self._seq.status is SequenceStatus.FINISHED_ERROR and self._seq.error is not None:
            raise self._seq.error
        return chunks, True

    def result(self, timeout: float | None = None) -> np.ndarray:
        """All PCM not yet consumed, concatenated, once the request finished; raises its RequestError."""
        if not self.wait(timeout):
            raise TimeoutError(f"request {self.request_id!r} did not finish within {timeout} s")
        chunks = list(self)
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
