"""A FakeRunner for engine tests: deterministic, paged for real, and strict about misuse.

The fake keeps a real paged "KV cache": every talker position writes (seq_id, position, digest of its
input row) into the slot its block table names, and every output is a hash of the whole prefix READ
BACK through the block table. So outputs depend only on a sequence's own inputs, and any block-manager
or scheduler mistake (a shared block, a stale slot, a block table too short, a wrong past_len) either
raises FakeKVError or changes the codes. Batching, preemption and recompute must reproduce identical
codes and PCM, which is what the tests compare.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.engine.sequence import Prompt, Request
from qwen3tts.errors import RequestError

CODEBOOK = 32
VOCAB = CODEBOOK + 1024  # like the release: the top 1024 ids are specials, suppressed except EOS
EOS = CODEBOOK + 8
SAMPLES_PER_FRAME = 4


class FakeKVError(RuntimeError):
    """The engine handed the runner an inconsistent block table or past length."""


class InjectedError(RuntimeError):
    """Raised on purpose by the fake to test per-request isolation."""


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part)
    return h.digest()


def _rng(digest: bytes) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(digest, "little"))


@dataclass
class FakeRunner:
    num_kv_blocks: int = 64
    block_size: int = 4
    hidden_size: int = 8
    eos_at: int = 40
    """The EOS logit rises by 1.5 per position past `eos_at`, so requests end a few frames after it."""
    vocab_size: int = VOCAB
    codebook_size: int = CODEBOOK
    eos_token_id: int = EOS
    fail_talker: set[int] = field(default_factory=set)  # seq ids whose presence makes talker() raise
    nan_logits: set[int] = field(default_factory=set)  # seq ids that get NaN logits
    fail_codec: set[int] = field(default_factory=set)  # seq ids whose codec_decode raises
    shared_kv: bool = False
    """Prefix caching: a slot written by another sequence may be read (its row digest still counts)."""
    talker_calls: list[list[tuple[int, int, int]]] = field(default_factory=list)  # (seq_id, past_len, n)
    code_predictor_calls: list[int] = field(default_factory=list)  # batch size of each call
    codec_calls: list[tuple[int, int]] = field(default_factory=list)  # (seq_id, num_frames)
    open_streams: dict[int, int] = field(default_factory=dict)  # seq_id -> frames decoded (+ context)
    codec_contexts: dict[int, np.ndarray | None] = field(default_factory=dict)  # seq_id -> codec_open's
    closed_streams: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._kv: list[list[tuple[int, int, bytes] | None]] = [
            [None] * self.block_size for _ in range(self.num_kv_blocks)
        ]
        self._previous: dict[int, bytes] = {}  # seq_id -> the last frame its codec stream decoded

    # ---- talker ----

    def talker(self, chunks: Sequence[TalkerChunk]) -> tuple[np.ndarray, np.ndarray]:
        self.talker_calls.append([(c.seq_id, c.past_len, len(c.embeddings)) for c in chunks])
        failing = [c.seq_id for c in chunks if c.seq_id in self.fail_talker]
        if failing:
            raise InjectedError(f"talker failure injected for seq {failing}")
        logits = np.empty((len(chunks), self.vocab_size), dtype=np.float32)
        hidden = np.empty((len(chunks), self.hidden_size), dtype=np.float32)
        for i, chunk in enumerate(chunks):
            self._write(chunk)
            prefix = self._read(chunk.seq_id, chunk.block_table, chunk.past_len + len(chunk.embeddings))
            logits[i], hidden[i] = self._outputs(prefix, chunk.past_len + len(chunk.embeddings))
            if chunk.seq_id in self.nan_logits:
                logits[i] = np.nan
        return logits, hidden

    def _slot(self, block_table: Sequence[int], position: int) -> tuple[int, int]:
        index = position // self.block_size
        if index >= len(block_table):
            raise FakeKVError(f"position {position} is beyond the block table {list(block_table)}")
        return block_table[index], position % self.block_size

    def _write(self, chunk: TalkerChunk) -> None:
        if chunk.embeddings.shape[1:] != (self.hidden_size,) or chunk.embeddings.dtype != np.float32:
            raise FakeKVError(f"bad embeddings {chunk.embeddings.shape} {chunk.embeddings.dtype}")
        for offset, row in enumerate(chunk.embeddings):
            block, slot = self._slot(chunk.block_table, chunk.past_len + offset)
            self._kv[block][slot] = (chunk.seq_id, chunk.past_len + offset, _digest(row.tobytes()))

    def _read(self, seq_id: int, block_table: Sequence[int], length: int) -> bytes:
        digests = []
        for position in range(length):
            block, slot = self._slot(block_table, position)
            entry = self._kv[block][slot]
            owner = entry[0] if entry is not None and self.shared_kv else seq_id
            if entry is None or entry[:2] != (owner, position):
                raise FakeKVError(
                    f"seq {seq_id} position {position} reads block {block} slot {slot}: {entry}"
                )
            digests.append(entry[2])
        return _digest(*digests)

    def _outputs(self, prefix: bytes, length: int) -> tuple[np.ndarray, np.ndarray]:
        rng = _rng(prefix)
        logits = 3.0 * rng.standard_normal(self.vocab_size).astype(np.float32)
        logits[self.eos_token_id] = 1.5 * (length - self.eos_at)
        return logits, rng.standard_normal(self.hidden_size).astype(np.float32)

    # ---- code predictor ----

    def code_predictor(self, hidden, code0, noise, temperature, top_k, top_p):
        n = len(hidden)
        if not (code0.shape == (n,) and noise.shape == (n, 15, self.codebook_size)):
            raise ValueError(f"bad code predictor shapes {code0.shape} {noise.shape}")
        self.code_predictor_calls.append(n)
        codes = np.empty((n, 15), dtype=np.int64)
        next_embed = np.empty((n, self.hidden_size), dtype=np.float32)
        for i in range(n):
            scores = 2.0 * _rng(_digest(hidden[i].tobytes(), code0[i].tobytes())).standard_normal(
                (15, CODEBOOK)
            )
            if temperature[i] > 0:  # Gumbel-max, the way the real graph samples from host noise
                scores = scores / temperature[i] - np.log(-np.log(noise[i]))
            codes[i] = scores.argmax(axis=1)
            next_embed[i] = _rng(_digest(code0[i].tobytes(), codes[i].tobytes())).standard_normal(
                self.hidden_size
            )
        return codes, next_embed

    # ---- codec ----

    def codec_open(self, seq_id: int, context: np.ndarray | None = None) -> None:
        if seq_id in self.open_streams:
            raise RuntimeError(f"codec stream {seq_id} opened twice")
        self.open_streams[seq_id] = 0
        self._previous[seq_id] = b""
        self.codec_contexts[seq_id] = None if context is None else np.array(context)
        if context is not None:
            self._decode(seq_id, np.asarray(context))  # left context: decoded, its samples dropped

    def codec_decode(self, seq_id: int, frames: np.ndarray, final: bool = False) -> np.ndarray:
        if seq_id in self.fail_codec:
            raise InjectedError(f"codec failure injected for seq {seq_id}")
        self.codec_calls.append((seq_id, len(frames)))
        return self._decode(seq_id, frames)

    def _decode(self, seq_id: int, frames: np.ndarray) -> np.ndarray:
        start = self.open_streams[seq_id]  # KeyError: decode on a stream that is not open
        self.open_streams[seq_id] = start + len(frames)
        # A frame's PCM depends on its codes, its index in the stream and the frame before it (the
        # decoder's left context): re-emitted, skipped or context-less frames show.
        pcm = []
        for i, frame in enumerate(frames):
            index = (start + i).to_bytes(4, "little")
            rng = _rng(_digest(frame.tobytes(), index, self._previous[seq_id]))
            pcm.append(rng.uniform(-1, 1, SAMPLES_PER_FRAME))
            self._previous[seq_id] = frame.tobytes()
        return np.concatenate(pcm).astype(np.float32) if pcm else np.zeros(0, np.float32)

    def codec_close(self, seq_id: int) -> None:
        self.open_streams.pop(seq_id, None)
        self.closed_streams.append(seq_id)


def fake_prompt_builder(hidden_size: int = 8, contexts: Mapping[str, np.ndarray] | None = None):
    """text -> a (P, H) prompt with P = number of words + 4, two trailing text vectors and a pad vector.

    The speaker "nobody" is rejected like an unknown voice in the real builder. A request whose
    `ref_audio` is a key of `contexts` gets those codes as its codec context (like an ICL voice).
    """

    def build(request: Request) -> Prompt:
        if request.speaker == "nobody":
            raise RequestError(f"unknown speaker {request.speaker!r}")
        rng = _rng(_digest(request.text.encode(), str(request.speaker).encode()))
        num_positions = len(request.text.split()) + 4
        return Prompt(
            embeddings=rng.standard_normal((num_positions, hidden_size)).astype(np.float32),
            trailing_text=rng.standard_normal((2, hidden_size)).astype(np.float32),
            pad_vector=rng.standard_normal(hidden_size).astype(np.float32),
            codec_context=(contexts or {}).get(request.ref_audio) if request.ref_audio else None,
        )

    return build
