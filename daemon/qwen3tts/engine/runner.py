"""What the engine needs from the model: the Runner protocol (runtime/ov_runner.py implements it).

One engine step makes exactly one `talker` call over every scheduled chunk (decodes and prefill chunks
mixed, one ragged batch) and one `code_predictor` call over every sequence that gets a frame, then one
`codec_decode` per sequence whose PCM chunk is due. Arrays are numpy; shapes are in the docstrings.
The engine never touches a runner from two threads at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class TalkerChunk:
    """New talker positions of one sequence in a step."""

    seq_id: int  # stable for the life of the request (also the codec stream id)
    embeddings: np.ndarray  # (n, H) f32: inputs of positions past_len .. past_len + n - 1 (read-only)
    past_len: int  # positions of this sequence already in the paged KV cache
    block_table: Sequence[int]  # physical KV blocks, in order; covers at least past_len + n positions


class Runner(Protocol):
    """The model behind the engine. Fixed facts are attributes; work is three kinds of calls."""

    block_size: int  # positions per KV block, read from the compiled talker (never a constant)
    num_kv_blocks: int  # KV blocks the runner allocated; block ids are 0 .. num_kv_blocks - 1
    hidden_size: int  # talker hidden size H
    vocab_size: int  # talker codec vocabulary (code-0 logits width; 3072 in the release)
    codebook_size: int  # codes per codebook (code-predictor vocabulary; 2048 in the release)
    eos_token_id: int  # codec_eos_token_id (2150 in the release)

    def talker(self, chunks: Sequence[TalkerChunk]) -> tuple[np.ndarray, np.ndarray]:
        """Run all chunks through the paged talker in one call and write their K/V into their blocks.

        Returns (logits (N, vocab) f32, hidden (N, H) f32) at the LAST position of each chunk, in chunk
        order: codec_head logits for code 0 and the final hidden state (after the closing norm).
        Re-running a chunk must be harmless (it rewrites the same cache slots): when a batched call
        raises, the engine retries each chunk alone to find the failing request.
        """
        ...

    def code_predictor(
        self,
        hidden: np.ndarray,
        code0: np.ndarray,
        noise: np.ndarray,
        temperature: np.ndarray,
        top_k: np.ndarray,
        top_p: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Codes 1..15 of one frame for N sequences in one call (sampling in-graph, Gumbel-max).

        hidden (N, H) f32 talker hidden of the step; code0 (N,) i64; noise (N, 15, codebook) f32
        uniforms; temperature (N,) f32 (0 = greedy); top_k (N,) i64 (0 = off); top_p (N,) f32.
        Returns (codes (N, 15) i64, next_embed (N, H) f32 = the summed codec embeddings of all 16
        codes, i.e. the next talker input before the text track is added). Stateless.
        """
        ...

    def codec_open(self, seq_id: int, context: np.ndarray | None = None) -> None:
        """Start a streaming decoder state for a new request.

        context (F, 16) i64, or None: codes to run through the decoder first, as left context of the
        generated ones (an ICL voice's reference codes). Their F * samples_per_frame samples are
        decoded but never returned: the first `codec_decode` output starts at the first generated
        frame, exactly the official decode of context + generated codes with the context's part cut.
        """
        ...

    def codec_decode(self, seq_id: int, frames: np.ndarray, final: bool = False) -> np.ndarray:
        """(n, 16) i64 codes that follow the previous call's -> (n * samples_per_frame,) f32 24 kHz PCM.

        `final` marks the stream's last frames: a codec with static chunk shapes may pad them.
        """
        ...

    def codec_close(self, seq_id: int) -> None:
        """Drop the decoder state (finish, cancel or error). Must not raise for an unknown id."""
        ...
