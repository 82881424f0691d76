"""transformer.apply_rope: the form the CPU plugin fuses into one RoPE kernel, with the same numbers."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs import transformer


def _numpy_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin


def test_apply_rope_is_fused_into_a_rope_kernel_and_matches_numpy():
    heads, positions, head_dim = 4, 3, 16
    x = ops.parameter([-1, heads, positions, head_dim], np.float32, name="x")
    position_ids = ops.parameter([-1, positions], np.int64, name="position_ids")
    cos, sin = transformer.rope_tables(position_ids, head_dim, 1e6)  # [B, 1, S, D]
    model = ov.Model([ops.result(transformer.apply_rope(x, cos, sin))], [x, position_ids])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    kinds = {op.get_rt_info()["layerType"].astype(str) for op in compiled.get_runtime_model().get_ops()}
    assert "RoPE" in kinds  # one fused kernel instead of Slice/Concat/eltwise on every decode step

    rng = np.random.default_rng(0)
    values = rng.standard_normal((2, heads, positions, head_dim)).astype(np.float32)
    ids = np.array([[0, 1, 2], [5, 6, 7]], np.int64)
    got = compiled({"x": values, "position_ids": ids})[0]
    angles = ids[..., None] * transformer.inverse_frequencies(head_dim, 1e6)  # [B, S, D/2]
    angles = np.concatenate([angles, angles], -1)[:, None]  # [B, 1, S, D]
    np.testing.assert_allclose(got, _numpy_rope(values, np.cos(angles), np.sin(angles)), atol=1e-5)
