"""Code-0 sampler against a straightforward numpy transcription of the HF logits processors.

The reference works on (batch, vocab) arrays the way transformers' processors do (gather/scatter for the
penalty, topk threshold, ascending sort + cumulative softmax for top-p) and is assembled with the same
conditions as `GenerationMixin._get_logits_processor`, so it shares no code with the sampler.
"""

import dataclasses

import numpy as np
import pytest

from qwen3tts.engine.config import SamplingParams
from qwen3tts.engine.sampler import (
    NOISE_MIN,
    code_predictor_noise,
    draw,
    process_logits,
    sample_code0,
    suppressed_mask,
)

VOCAB = 1024 + 48
EOS = 1024 + 10  # inside the suppressed range, exempt from it as in the release (2150 in 3072)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def hf_pipeline(params: SamplingParams, eos: int, suppress_ids: list[int]):
    def repetition_penalty(ids, scores):
        score = np.take_along_axis(scores, ids, axis=1)
        score = np.where(score < 0, score * params.repetition_penalty, score / params.repetition_penalty)
        np.put_along_axis(scores, ids, score, axis=1)
        return scores

    def min_new_tokens(ids, scores):
        if ids.shape[1] < params.min_new_tokens:
            scores[:, eos] = -np.inf
        return scores

    def suppress(ids, scores):
        scores[:, suppress_ids] = -np.inf
        return scores

    def temperature(ids, scores):
        return scores / params.temperature

    def top_k(ids, scores):
        k = min(params.top_k, scores.shape[-1])
        kth = -np.sort(-scores, axis=-1)[:, k - 1 : k]
        return np.where(scores < kth, -np.inf, scores)

    def top_p(ids, scores):
        order = np.argsort(scores, axis=-1, kind="stable")
        sorted_logits = np.take_along_axis(scores, order, axis=-1)
        cumulative = np.cumsum(_softmax(sorted_logits), axis=-1)
        remove_sorted = cumulative <= 1 - params.top_p
        remove_sorted[:, -1:] = False
        remove = np.zeros_like(remove_sorted)
        np.put_along_axis(remove, order, remove_sorted, axis=-1)
        return np.where(remove, -np.inf, scores)

    processors = []
    if params.repetition_penalty != 1.0:
        processors.append(repetition_penalty)
    if params.min_new_tokens > 0:
        processors.append(min_new_tokens)
    processors.append(suppress)
    if not params.talker_greedy:  # warpers only exist with do_sample=True
        if params.temperature != 1.0:
            processors.append(temperature)
        if params.top_k != 0:
            processors.append(top_k)
        if params.top_p < 1.0:
            processors.append(top_p)
    return processors


def hf_process(logits, history, params):
    suppress_ids = [i for i in range(VOCAB - 1024, VOCAB) if i != EOS]
    ids = np.asarray(history, dtype=np.int64)[None]
    scores = np.array(logits, dtype=np.float32)[None]
    for processor in hf_pipeline(params, EOS, suppress_ids):
        scores = processor(ids, scores)
    return scores[0]


PARAMS = [
    SamplingParams(),  # the official defaults
    SamplingParams(temperature=0.7, top_k=5, top_p=0.8, repetition_penalty=1.3),
    SamplingParams(temperature=1.0, top_k=0, top_p=0.5, repetition_penalty=1.0),
    SamplingParams(temperature=1.3, top_k=1000, top_p=0.95, repetition_penalty=2.0, min_new_tokens=0),
    SamplingParams(greedy=True, repetition_penalty=1.5),
]
HISTORIES = [[], [7], [3, 3, 9, 40, 3], list(range(0, 48, 2))]


@pytest.mark.parametrize(
    "params", PARAMS, ids=lambda p: f"T{p.temperature}-k{p.top_k}-p{p.top_p}-g{p.greedy}"
)
@pytest.mark.parametrize("history", HISTORIES, ids=len)
def test_processed_scores_match_the_hf_processor_chain(params, history):
    rng = np.random.default_rng(len(history))
    logits = (3 * rng.standard_normal(VOCAB)).astype(
        np.float32
    )  # negative and positive: both penalty branches
    ours = process_logits(logits, np.array(history), params, EOS, suppressed_mask(VOCAB, EOS))
    expected = hf_process(logits, history, params)
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(ours[finite], expected[finite], rtol=1e-6)
    assert finite.sum() >= 1


def test_the_chain_order_matters_so_the_reference_comparison_can_fail():
    # Penalty before top-k (HF) vs after: id 0 is penalized out of the top 2 only in HF order.
    logits = np.full(VOCAB, -50, np.float32)
    logits[:3] = [10.0, 9.0, 8.5]
    params = SamplingParams(temperature=1.0, top_k=2, repetition_penalty=2.0, min_new_tokens=0)
    ours = process_logits(logits, np.array([0]), params, EOS, suppressed_mask(VOCAB, EOS))
    assert np.isfinite(ours[:3]).tolist() == [False, True, True]


def test_suppression_covers_the_top_1024_ids_except_eos():
    mask = suppressed_mask(VOCAB, EOS)
    assert mask.sum() == 1023 and not mask[EOS] and not mask[:48].any() and mask[48:].sum() == 1023


def test_eos_is_masked_for_the_first_two_tokens_then_allowed():
    logits = np.zeros(VOCAB, np.float32)
    logits[EOS] = 100.0
    greedy = SamplingParams(greedy=True)
    tokens = [
        sample_code0(logits[None], [np.arange(n)], [greedy], [None], EOS, suppressed_mask(VOCAB, EOS))[0]
        for n in range(4)
    ]
    assert tokens[0] != EOS and tokens[1] != EOS and tokens[2:] == [EOS, EOS]


def test_greedy_takes_the_argmax_after_the_repetition_penalty():
    logits = np.zeros(VOCAB, np.float32)
    logits[[4, 5]] = [3.0, 2.0]
    params = SamplingParams(greedy=True, repetition_penalty=2.0)
    mask = suppressed_mask(VOCAB, EOS)
    assert sample_code0(logits[None], [np.array([1, 2])], [params], [None], EOS, mask)[0] == 4
    assert sample_code0(logits[None], [np.array([4, 4])], [params], [None], EOS, mask)[0] == 5  # 3/2 < 2


def test_temperature_zero_is_greedy_and_draws_nothing_from_the_rng():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    logits = np.arange(VOCAB, dtype=np.float32) * 0.01  # increasing: the best allowed id is 47
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0)
    token = sample_code0(logits[None], [np.array([])], [params], [rng], EOS, suppressed_mask(VOCAB, EOS))[0]
    assert token == 47  # EOS (higher) is masked by min_new_tokens, 48.. are suppressed
    assert rng.bit_generator.state == state


def test_draws_follow_the_softmax_of_the_processed_scores():
    scores = np.full(VOCAB, -np.inf, np.float32)
    scores[[3, 8, 20]] = [1.0, 0.0, -1.0]
    rng = np.random.default_rng(1)
    counts = np.bincount([draw(scores, rng) for _ in range(20000)], minlength=VOCAB)
    expected = _softmax(np.array([1.0, 0.0, -1.0]))
    assert counts.sum() == counts[[3, 8, 20]].sum()  # never an id outside the support
    np.testing.assert_allclose(counts[[3, 8, 20]] / 20000, expected, atol=0.015)


def _sample_run(seed: int, params: SamplingParams, steps: int = 40) -> list[int]:
    rng = np.random.default_rng(seed)
    logits_rng = np.random.default_rng(123)  # the same "model" for every run
    history: list[int] = []
    for _ in range(steps):
        logits = (3 * logits_rng.standard_normal(VOCAB)).astype(np.float32)
        mask = suppressed_mask(VOCAB, EOS)
        history.append(int(sample_code0(logits[None], [np.array(history)], [params], [rng], EOS, mask)[0]))
    return history


def test_the_same_seed_gives_the_same_tokens_and_another_seed_differs():
    assert _sample_run(7, SamplingParams()) == _sample_run(7, SamplingParams())
    assert _sample_run(7, SamplingParams()) != _sample_run(8, SamplingParams())
    assert _sample_run(7, SamplingParams(greedy=True)) == _sample_run(8, SamplingParams(greedy=True))


def test_each_row_uses_its_own_params_and_rng_regardless_of_the_batch():
    rng = np.random.default_rng(5)
    logits = (3 * rng.standard_normal((3, VOCAB))).astype(np.float32)
    params = [SamplingParams(), SamplingParams(greedy=True), SamplingParams(top_k=3, temperature=1.5)]
    histories = [np.array([1, 2]), np.array([]), np.array([5, 5, 5])]
    mask = suppressed_mask(VOCAB, EOS)
    batched = sample_code0(
        logits, histories, params, [np.random.default_rng(s) for s in (1, 2, 3)], EOS, mask
    )
    alone = [
        sample_code0(
            logits[i : i + 1], [histories[i]], [params[i]], [np.random.default_rng(i + 1)], EOS, mask
        )[0]
        for i in range(3)
    ]
    assert batched.tolist() == alone


def test_code_predictor_noise_is_uniform_per_row_seeded_and_constant_for_greedy_rows():
    params = [SamplingParams(), dataclasses.replace(SamplingParams(), subtalker_temperature=0.0)]
    rngs = [np.random.default_rng(1), np.random.default_rng(2)]
    greedy_state = rngs[1].bit_generator.state
    noise = code_predictor_noise(rngs, params, num_codes=15, vocab=64)
    assert noise.shape == (2, 15, 64) and noise.dtype == np.float32
    assert noise[0].min() >= NOISE_MIN and noise[0].max() < 1.0 and abs(noise[0].mean() - 0.5) < 0.05
    assert np.all(noise[1] == 0.5) and rngs[1].bit_generator.state == greedy_state
    again = code_predictor_noise([np.random.default_rng(1)], params[:1], num_codes=15, vocab=64)
    np.testing.assert_array_equal(again[0], noise[0])
