"""exact_topk: the fast unstable TopK with a stable fallback must equal a stable sort, ties included."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from qwen3tts.model.graphs.gumbel_sampler import exact_topk

WIDTH = 512


@pytest.fixture(scope="module")
def topk():
    x = ops.parameter([-1, WIDTH], np.float32, name="x")
    k = ops.parameter([], np.int64, name="k")
    values, ids = exact_topk(x.output(0), k.output(0), WIDTH)
    model = ov.Model([ops.result(values), ops.result(ids)], [x, k])
    return ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def _stable_reference(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Descending by value, ties by lower index (numpy's stable argsort of -x)."""
    ids = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(x, ids, 1), ids


@pytest.mark.parametrize("levels", [3, 40, None], ids=["many-ties", "some-ties", "no-ties"])
@pytest.mark.parametrize("k", [1, 7, 50, WIDTH])
def test_exact_topk_equals_a_stable_sort(topk, levels, k):
    rng = np.random.default_rng(k)
    for batch in (1, 3):
        if levels is None:
            x = rng.standard_normal((batch, WIDTH)).astype(np.float32)
        else:  # few distinct values: ties inside the top k and at its boundary
            x = rng.integers(0, levels, (batch, WIDTH)).astype(np.float32)
        out = topk({"x": x, "k": np.array(k, np.int64)})
        want_values, want_ids = _stable_reference(x, k)
        np.testing.assert_array_equal(out[1], want_ids)
        np.testing.assert_array_equal(out[0], want_values)


def test_a_tie_only_at_the_boundary_keeps_the_lower_index(topk):
    x = np.zeros((1, WIDTH), np.float32)
    x[0, [10, 400]] = 2.0  # the two largest, distinct from the rest
    x[0, [300, 20, 450]] = 1.0  # three tied for the 3rd place; k = 3 must pick index 20
    out = topk({"x": x, "k": np.array(3, np.int64)})
    np.testing.assert_array_equal(out[1], [[10, 400, 20]])
