"""Code-0 sampling on the host, in the official HF processor order:

    repetition penalty -> min-new-tokens (EOS masked) -> suppress [vocab-1024, vocab) except EOS
    -> temperature -> top-k -> top-p -> softmax -> draw

Greedy rows stop after the suppression and take the argmax, like HF with do_sample=False (whose
warpers are not installed). Each row draws from its own sequence's numpy Generator, so a request's
audio depends on its seed only, never on what else shares the batch.

Codes 1..15 are sampled inside the code-predictor graph (Gumbel-max over its top-k); the host only
supplies uniform noise, drawn here from the same per-sequence generators.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qwen3tts.engine.config import SamplingParams

NUM_SUPPRESSED = 1024  # the official wrapper suppresses the top 1024 ids of the codec vocabulary
NOISE_MIN = float(np.finfo(np.float32).tiny)  # keeps -log(-log(u)) finite


def suppressed_mask(vocab_size: int, eos_token_id: int) -> np.ndarray:
    """(vocab,) bool: ids [vocab-1024, vocab) except EOS, i.e. the specials the talker must not emit."""
    mask = np.zeros(vocab_size, dtype=bool)
    mask[max(0, vocab_size - NUM_SUPPRESSED) :] = True
    mask[eos_token_id] = False
    return mask


def apply_repetition_penalty(scores: np.ndarray, history: np.ndarray, penalty: float) -> np.ndarray:
    """HF RepetitionPenaltyLogitsProcessor: each id seen once or more is divided (>0) or multiplied (<0)."""
    if penalty == 1.0 or len(history) == 0:
        return scores
    seen = np.unique(history)
    picked = scores[seen]
    scores[seen] = np.where(picked < 0, picked * penalty, picked / penalty)
    return scores


def apply_min_new_tokens(scores: np.ndarray, num_generated: int, min_new_tokens: int, eos: int) -> np.ndarray:
    """HF MinNewTokensLengthLogitsProcessor: no EOS before `min_new_tokens` tokens exist."""
    if num_generated < min_new_tokens:
        scores[eos] = -np.inf
    return scores


def apply_top_k(scores: np.ndarray, top_k: int) -> np.ndarray:
    """HF TopKLogitsWarper: drop everything below the k-th largest score (ties at the edge stay)."""
    if top_k <= 0 or top_k >= len(scores):
        return scores
    kth_largest = np.partition(scores, -top_k)[-top_k]
    scores[scores < kth_largest] = -np.inf
    return scores


def apply_top_p(scores: np.ndarray, top_p: float) -> np.ndarray:
    """HF TopPLogitsWarper: drop the low tail whose total probability is <= 1 - top_p (keep >= 1)."""
    if top_p >= 1.0:
        return scores
    ascending = np.argsort(scores, kind="stable")
    cumulative = np.cumsum(_softmax(scores[ascending]))
    remove = cumulative <= 1.0 - top_p
    remove[-1] = False
    scores[ascending[remove]] = -np.inf
    return scores


def process_logits(
    logits: np.ndarray, history: np.ndarray, params: SamplingParams, eos: int, suppressed: np.ndarray
) -> np.ndarray:
    """(vocab,) f32 scores after every processor that applies to this row, in HF order."""
    scores = np.array(logits, dtype=np.float32)
    scores = apply_repetition_penalty(scores, history, params.repetition_penalty)
    scores = apply_min_new_tokens(scores, len(history), params.min_new_tokens, eos)
    scores[suppressed] = -np.inf
    if params.talker_greedy:
        return scores
    if params.temperature != 1.0:
        scores = scores / np.float32(params.temperature)
    scores = apply_top_k(scores, params.top_k)
    return apply_top_p(scores, params.top_p)


def draw(scores: np.ndarray, rng: np.random.Generator) -> int:
    """One id from softmax(scores) by inverting the CDF with a single uniform draw."""
    cdf = np.cumsum(_softmax(scores.astype(np.float64)))
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(cdf) - 1))


def sample_code0(
    logits: np.ndarray,
    histories: Sequence[np.ndarray],
    params: Sequence[SamplingParams],
    rngs: Sequence[np.random.Generator],
    eos: int,
    suppressed: np.ndarray,
) -> np.ndarray:
    """(N,) int64 code-0 tokens for (N, vocab) logits; row i uses histories/params/rngs[i]."""
    tokens = np.empty(len(logits), dtype=np.int64)
    for i, row in enumerate(logits):
        scores = process_logits(row, histories[i], params[i], eos, suppressed)
        tokens[i] = int(np.argmax(scores)) if params[i].talker_greedy else draw(scores, rngs[i])
    return tokens


def code_predictor_noise(
    rngs: Sequence[np.random.Generator], params: Sequence[SamplingParams], num_codes: int, vocab: int
) -> np.ndarray:
    """(N, num_codes, vocab) f32 uniforms in (0, 1) for the in-graph Gumbel-max sampler.

    Greedy rows get a constant (the graph takes the argmax there) and consume nothing from their rng.
    """
    noise = np.full((len(rngs), num_codes, vocab), 0.5, dtype=np.float32)
    for i, rng in enumerate(rngs):
        if not params[i].subtalker_greedy:
            noise[i] = np.maximum(rng.random((num_codes, vocab), dtype=np.float32), NOISE_MIN)
    return noise


def _softmax(x: np.ndarray) -> np.ndarray:
    finite_max = np.max(x[np.isfinite(x)]) if np.isfinite(x).any() else 0.0
    e = np.exp(x - finite_max)
    return e / e.sum()
