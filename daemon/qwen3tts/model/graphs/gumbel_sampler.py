"""The code predictor's in-graph sampler: temperature / top-k / top-p by Gumbel-max (code_predictor.py).

The semantics are described in code_predictor.py's module docstring. This file holds the graph
pieces, and one speed point: OpenVINO's CPU TopK with `stable=True` (ties go to the lower token id,
which the semantics require) costs about 0.4 ms per step for k = 50 over a 2048-entry codebook and
about 9 ms for k = 2048 (no top-k), O(n * k), against a few microseconds unstable. `exact_topk`
therefore runs the unstable TopK and falls back to the stable one (an If) only when the result has a
tie that an unstable sort may order differently; without ties both return the same values and ids,
so the codes are bit-identical to the stable TopK's either way. And a batch in which no row filters
(top-k off and top_p >= 1) takes an If branch without TopK over the codebook at all: a full-width
stable TopK per step made `subtalker_top_k: 0` synthesis 6.5x slower.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset8 as ops8
import openvino.opset13 as ops

from qwen3tts.model.graphs import layers
from qwen3tts.model.graphs.layers import i64

# The uniform noise is clamped into this range so the Gumbel term is always finite.
NOISE_MIN = float(np.finfo(np.float32).tiny)
NOISE_MAX = float(np.float32(1.0) - np.float32(2.0**-24))


def exact_topk(x: ov.Output, k: ov.Output, width: int) -> tuple[ov.Output, ov.Output]:
    """Stable TopK of x [B, width] f32 (descending, ties by lower index) with k a 0-d i64; values, ids.

    The unstable result equals the stable one unless two of the k largest values are equal or a value
    outside them equals the k-th: only then the If runs the (slow) stable TopK.
    """
    fast = ops.topk(x, k, -1, "max", "value", "i64", stable=False)
    values = fast.output(0)  # [B, k] descending; exact whatever order ties came in
    kth = ops.gather(values, ops.subtract(k, i64(1)), i64(1))  # [B]
    at_or_above = ops.convert(ops.greater_equal(x, _unsqueeze(kth, 1)), "i64")  # [B, width]
    boundary_tie = ops.greater(ops.reduce_sum(at_or_above, i64([1]), keep_dims=False), k)  # [B]
    after = ops.slice(values, i64([1]), i64([np.iinfo(np.int64).max]), i64([1]), i64([1]))  # [B, k-1]
    before = ops.slice(values, i64([0]), i64([-1]), i64([1]), i64([1]))  # [B, k-1]
    inner_tie = ops.reduce_logical_or(ops.equal(after, before), i64([1]), keep_dims=False)  # [B]
    tie = ops.reduce_logical_or(ops.logical_or(boundary_tie, inner_tie), i64([0]), keep_dims=False)

    stable_x = ops.parameter([-1, width], np.float32)
    stable_k = ops.parameter([], np.int64)
    stable = ops.topk(stable_x, stable_k, -1, "max", "value", "i64", stable=True)
    then_body = ov.Model([ops.result(stable.output(0)), ops.result(stable.output(1))], [stable_x, stable_k])
    unused_x = ops.parameter([-1, width], np.float32)
    fast_values = ops.parameter([-1, -1], np.float32)
    fast_ids = ops.parameter([-1, -1], np.int64)
    else_body = ov.Model([ops.result(fast_values), ops.result(fast_ids)], [unused_x, fast_values, fast_ids])

    # runtime/tie_fallback.py finds this If by its bodies' shape (one stable TopK / inputs handed through)
    # to force it at load: a change here must keep that shape or teach is_tie_fallback the new one
    node = ops8.if_op(tie.output(0))
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(x, stable_x, unused_x)
    node.set_input(k, stable_k, None)
    node.set_input(values, None, fast_values)
    node.set_input(fast.output(1), None, fast_ids)
    out_values = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    out_ids = node.set_output(then_body.get_results()[1], else_body.get_results()[1])
    return out_values, out_ids


class GumbelTopKSampler:
    """In-graph temperature / top-k / top-p sampling by Gumbel-max (see code_predictor.py's docstring).

    When no row of the batch filters (top-k off, top_p >= 1: e.g. `subtalker_top_k: 0`), an If takes a
    branch without any TopK over the codebook: Gumbel-max over every token needs no order, only an
    argmax. Otherwise the filtered branch sorts the top max_k (exact_topk), as before.
    """

    def __init__(self, top_k: ov.Node, temperature: ov.Node, top_p: ov.Node, vocab_size: int):
        no_filter = ops.logical_or(ops.less_equal(top_k, i64(0)), ops.greater(top_k, i64(vocab_size)))
        self.vocab_size = vocab_size
        self.top_k = ops.select(no_filter, i64(vocab_size), top_k)  # [B] in 1..V
        self.max_k = ops.reduce_max(self.top_k, i64(0), keep_dims=False)  # scalar: TopK width for the batch
        self.greedy = ops.less_equal(temperature, layers.const(0.0))  # [B]
        self.temperature = _unsqueeze(ops.select(self.greedy, layers.const(1.0), temperature), 1)  # [B, 1]
        self.top_p = _unsqueeze(top_p, 1)  # [B, 1]
        filters = ops.logical_or(ops.less(self.top_k, i64(vocab_size)), ops.less(top_p, layers.const(1.0)))
        self.any_filter = ops.reduce_logical_or(filters, i64([0]), keep_dims=False)  # scalar bool

    def sample(self, logits: ov.Node, noise: ov.Node) -> ov.Node:
        """logits [B, V], noise [B, V] -> codes [B] i64."""
        inputs = {
            "logits": logits.output(0),
            "noise": noise.output(0),
            "top_k": self.top_k.output(0),
            "max_k": self.max_k.output(0),
            "greedy": self.greedy.output(0),
            "temperature": self.temperature.output(0),
            "top_p": self.top_p.output(0),
        }
        return _branch(
            self.any_filter.output(0), _filtered_sample(self.vocab_size), _unfiltered_sample, inputs
        )


def _filtered_sample(vocab_size: int):
    def build(p: dict[str, ov.Node]) -> ov.Node:
        """Top-k (exact_topk over the batch's widest k), then top-p, then Gumbel-max over the kept."""
        values, token_ids = exact_topk(p["logits"].output(0), p["max_k"].output(0), vocab_size)  # [B, K]
        rank = ops.range(i64(0), p["max_k"], i64(1), "i64")  # [K]
        keep = ops.less(_unsqueeze(rank, 0), _unsqueeze(p["top_k"], 1))  # [B, K]
        scaled = ops.divide(values, p["temperature"])  # [B, K]
        keep = ops.logical_and(keep, _top_p_keep(scaled, keep, rank, p["top_p"]))
        uniform = ops.clamp(ops.gather_elements(p["noise"], token_ids, 1), NOISE_MIN, NOISE_MAX)  # [B, K]
        scores = ops.select(keep, ops.add(scaled, _gumbel(uniform)), layers.const(-np.inf))  # [B, K]
        pick = ops.topk(scores, i64(1), -1, "max", "value", "i64", stable=True).output(1)  # [B, 1]
        sampled = ops.squeeze(ops.gather_elements(token_ids, pick, 1), i64([1]))  # [B]
        greedy = ops.squeeze(ops.gather(token_ids, i64([0]), i64(1)), i64([1]))  # [B]
        return ops.select(p["greedy"], greedy, sampled)

    return build


def _unfiltered_sample(p: dict[str, ov.Node]) -> ov.Node:
    """Every token kept: Gumbel-max straight over the codebook, the noise already indexed by token id.
    Argmax ties go to the lower id (stable TopK of width 1, O(V)), as in the filtered branch."""
    uniform = ops.clamp(p["noise"], NOISE_MIN, NOISE_MAX)  # [B, V]
    scores = ops.add(ops.divide(p["logits"], p["temperature"]), _gumbel(uniform))  # [B, V]
    sampled = ops.topk(scores, i64(1), -1, "max", "value", "i64", stable=True).output(1)  # [B, 1]
    greedy = ops.topk(p["logits"], i64(1), -1, "max", "value", "i64", stable=True).output(1)  # [B, 1]
    return ops.squeeze(ops.select(_unsqueeze(p["greedy"], 1), greedy, sampled), i64([1]))  # [B]


def _gumbel(uniform: ov.Node) -> ov.Node:
    return ops.negative(ops.log(ops.negative(ops.log(uniform))))


def _top_p_keep(scaled: ov.Node, keep: ov.Node, rank: ov.Node, top_p: ov.Node) -> ov.Node:
    """HF TopPLogitsWarper: keep a token while the mass ranked strictly above it is < top_p."""
    probs = ops.softmax(ops.select(keep, scaled, layers.const(-np.inf)), -1)  # [B, K]
    mass_above = ops.cumsum(probs, i64(1), exclusive=True)  # [B, K]
    top_p_off = ops.greater_equal(top_p, layers.const(1.0))  # [B, 1]
    keep_p = ops.logical_or(ops.less(mass_above, top_p), top_p_off)
    return ops.logical_or(keep_p, ops.equal(_unsqueeze(rank, 0), i64(0)))  # never drop the best token


def _branch(condition: ov.Output, then_build, else_build, inputs: dict[str, ov.Output]) -> ov.Output:
    """If(condition) over two bodies built from Parameters standing for `inputs`; returns its output."""
    bodies = []
    for build in (then_build, else_build):
        params = {
            name: ops.parameter(value.get_partial_shape(), value.get_element_type())
            for name, value in inputs.items()
        }
        bodies.append((ov.Model([ops.result(build(params))], list(params.values())), params))
    (then_body, then_params), (else_body, else_params) = bodies
    node = ops8.if_op(condition)
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    for name, value in inputs.items():
        node.set_input(value, then_params[name], else_params[name])
    return node.set_output(then_body.get_results()[0], else_body.get_results()[0])


def _unsqueeze(x, axis: int) -> ov.Node:
    return ops.unsqueeze(x, i64([axis]))
