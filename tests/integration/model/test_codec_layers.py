"""The codec's fast layer forms compute what the upstream ops compute.

SnakeBeta's sin^2 is a polynomial (the CPU plugin's Sin is a slow reference kernel) and each causal
transposed conv is a polyphase ordinary conv (ConvolutionBackpropData takes a slow gemm path). Here
each is checked against the plain definition: float64 numpy sine, and OpenVINO's own transposed
convolution with the official right trim, including the frame carried between two chunks.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from qwen3tts.model.graphs.codec_layers import causal_trans_conv, polyphase_weight, sin_squared

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
SIN2_TOLERANCE = 2e-7  # f32 sin(y)^2 itself is off by up to ~1.2e-7 (np.sin in f32, squared)
CONV_TOLERANCE = 1e-5


def _compile(outputs, params):
    return ov.Core().compile_model(ov.Model(outputs, params), "CPU", F32)


@pytest.fixture(scope="module")
def sin_squared_graph():
    y = ops.parameter([-1], ov.Type.f32, name="y")
    compiled = _compile([sin_squared(y)], [y])
    return lambda values: compiled({"y": values.astype(np.float32)})[0]


@pytest.mark.parametrize("scale", [0.1, 3.0, 100.0, 2000.0])
def test_sin_squared_polynomial_matches_float64_sine(sin_squared_graph, scale):
    rng = np.random.default_rng(int(scale * 10))
    y = (rng.normal(0.0, scale, 500_000)).astype(np.float32)
    got = sin_squared_graph(y)
    exact = np.sin(y.astype(np.float64)) ** 2
    diff = float(np.abs(got - exact).max())
    print(f"scale {scale}: max |sin^2 diff| = {diff:.3g}")
    assert diff < SIN2_TOLERANCE


def test_sin_squared_is_exact_at_the_reduction_boundaries(sin_squared_graph):
    # multiples of pi/4 are where the quarter-period reduction switches between sin^2 and 1 - sin^2
    y = (np.arange(-4000, 4001) * (np.pi / 4)).astype(np.float32)
    y = np.concatenate([y, np.nextafter(y, np.float32(np.inf)), np.nextafter(y, np.float32(-np.inf))])
    diff = float(np.abs(sin_squared_graph(y) - np.sin(y.astype(np.float64)) ** 2).max())
    print(f"boundaries: max |sin^2 diff| = {diff:.3g}")
    assert diff < SIN2_TOLERANCE


class _ChunkState:
    """A CarriedState with one Parameter per carried tensor and their successors as Results."""

    def __init__(self, shapes: dict[str, list[int]]):
        self.params = {name: ops.parameter(shape, ov.Type.f32, name=name) for name, shape in shapes.items()}
        self.written: dict[str, ov.Node] = {}

    def read(self, name):
        return self.params[name]

    def write(self, name, value):
        self.written[name] = value


def _official_trans_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray, stride: int) -> np.ndarray:
    """The upstream definition: ConvTranspose1d (no padding), then k - s samples trimmed on the right."""
    xp = ops.parameter(list(x.shape), ov.Type.f32, name="x")
    y = ops.convolution_backprop_data(xp, ops.constant(w), [stride], pads_begin=[0], pads_end=[0])
    full = _compile([y], [xp])({"x": x})[0] + bias.reshape(1, -1, 1)
    return full[:, :, : full.shape[2] - (w.shape[2] - stride)]


@pytest.mark.parametrize("kernel, stride", [(16, 8), (10, 5), (8, 4), (6, 3), (2, 2), (5, 2), (3, 3)])
def test_polyphase_conv_equals_the_trimmed_transposed_conv_across_chunks(kernel, stride):
    rng = np.random.default_rng(kernel * 10 + stride)
    c_in, c_out, frames = 12, 8, 9
    w = rng.normal(0, 0.3, (c_in, c_out, kernel)).astype(np.float32)
    bias = rng.normal(0, 0.3, c_out).astype(np.float32)
    weights = {"m.conv.weight": w, "m.conv.bias": bias}
    x = rng.normal(0, 1, (1, c_in, frames)).astype(np.float32)
    expected = _official_trans_conv(x, w, bias, stride)  # [1, c_out, frames * stride]

    carry = -(-kernel // stride) - 1
    split = 4  # decode frames [0, 4) then [4, 9), the carried input frames in between
    outputs = []
    carried = np.zeros((1, c_in, carry), np.float32)
    for part in (x[:, :, :split], x[:, :, split:]):
        state = _ChunkState({"m": [1, c_in, carry]} if carry else {})
        xp = ops.parameter(list(part.shape), ov.Type.f32, name="x")
        y = causal_trans_conv(xp, weights, "m", stride, state)
        results = [y, *state.written.values()]
        compiled = _compile(results, [xp, *state.params.values()])
        out = compiled({"x": part, **({"m": carried} if carry else {})})
        outputs.append(out[0])
        if carry:
            carried = out[1]
    got = np.concatenate(outputs, 2)
    assert got.shape == expected.shape == (1, c_out, frames * stride)
    diff = float(np.abs(got - expected).max())
    print(f"k={kernel} s={stride}: max |diff| = {diff:.3g}")
    assert diff < CONV_TOLERANCE


def test_polyphase_weight_puts_each_kernel_index_on_its_phase_and_tap():
    c_in, c_out, kernel, stride = 2, 3, 6, 3
    w = np.arange(c_in * c_out * kernel, dtype=np.float32).reshape(c_in, c_out, kernel)
    conv = polyphase_weight(w, stride)  # [c_out * stride, c_in, 2]
    assert conv.shape == (c_out * stride, c_in, 2)
    for o in range(c_out):
        for j in range(stride):
            # the last tap reads frame t (kernel index j), the first reads frame t - 1 (index j + s)
            np.testing.assert_array_equal(conv[o * stride + j, :, 1], w[:, o, j])
            np.testing.assert_array_equal(conv[o * stride + j, :, 0], w[:, o, j + stride])
