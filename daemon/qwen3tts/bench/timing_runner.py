"""TimingRunner: an engine Runner around another one that records how long each call took.

The engine sees the same runner (same attributes, same results); the bench reads `calls` to split
each engine step into talker, code predictor, codec and host time (step wall time minus the calls).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from qwen3tts.engine.runner import Runner, TalkerChunk

STAGES = ("talker", "code_predictor", "codec")


@dataclass(frozen=True)
class Call:
    """One runner call: which stage, how long, and how much work it carried."""

    stage: str
    seconds: float
    rows: int  # talker: sequences; code predictor: sequences; codec: 1 stream
    tokens: int = 0  # talker: positions computed; codec: frames passed in
    contexts: tuple[int, ...] = ()  # talker: past_len + n per sequence (KV positions each one reads)


class TimingRunner:
    """Implements engine.runner.Runner by delegating to `inner` and timing every call."""

    def __init__(self, inner: Runner):
        self.inner = inner
        self.block_size = inner.block_size
        self.num_kv_blocks = inner.num_kv_blocks
        self.hidden_size = inner.hidden_size
        self.vocab_size = inner.vocab_size
        self.codebook_size = inner.codebook_size
        self.eos_token_id = inner.eos_token_id
        self.calls: list[Call] = []

    def talker(self, chunks: Sequence[TalkerChunk]) -> tuple[np.ndarray, np.ndarray]:
        started = time.perf_counter()
        result = self.inner.talker(chunks)
        tokens = [len(chunk.embeddings) for chunk in chunks]
        contexts = tuple(chunk.past_len + n for chunk, n in zip(chunks, tokens, strict=True))
        self.calls.append(Call("talker", time.perf_counter() - started, len(chunks), sum(tokens), contexts))
        return result

    def code_predictor(
        self, hidden, code0, noise, temperature, top_k, top_p
    ) -> tuple[np.ndarray, np.ndarray]:
        started = time.perf_counter()
        result = self.inner.code_predictor(hidden, code0, noise, temperature, top_k, top_p)
        self.calls.append(Call("code_predictor", time.perf_counter() - started, len(hidden)))
        return result

    def codec_open(self, seq_id: int, context: np.ndarray | None = None) -> None:
        self.inner.codec_open(seq_id, context)

    def codec_decode(self, seq_id: int, frames: np.ndarray, final: bool = False) -> np.ndarray:
        started = time.perf_counter()
        pcm = self.inner.codec_decode(seq_id, frames, final)
        self.calls.append(Call("codec", time.perf_counter() - started, 1, len(frames)))
        return pcm

    def codec_close(self, seq_id: int) -> None:
        self.inner.codec_close(seq_id)
