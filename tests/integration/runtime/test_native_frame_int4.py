"""The INT4 kernels of the fused code-predictor frame (INT4_SYM weights, a scale per group of input
channels; native/src/kernels.hpp's y4) against a float32 statement of their documented arithmetic, bit for
bit, on every kernel set this CPU runs and every blocking.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from test_native_frame import ALL_SETS

from qwen3tts.runtime.native import DEFAULT_LIBRARY, load_library


@pytest.fixture(scope="module")
def library():
    found = load_library()
    assert found is not None, f"{DEFAULT_LIBRARY} is missing: scripts/setup.sh builds it"
    return found


def _call_matmul_i4(library, isa, x, packed, scale, group, nw):
    """native/src/c_api.cpp's qwen3tts_native_matmul_i4: (status, y [m, n])."""
    function = library.cdll.qwen3tts_native_matmul_i4
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_char_p, p, i64, p, p, i64, i64, i64, ctypes.c_int, p]
    (m, k), n = x.shape, packed.shape[0]
    y = np.empty((m, n), np.float32)
    args = (x.ctypes.data, m, packed.ctypes.data, scale.ctypes.data, n, k, group, nw, y.ctypes.data)
    return function(isa.encode(), *args), y


def _matmul_i4(library, isa, x, packed, scale, group, nw):
    status, y = _call_matmul_i4(library, isa, x, packed, scale, group, nw)
    assert status == 0, (isa, group, nw)
    return y


def _pack(w):
    """[n, k] values in -8..7 as OpenVINO's i4: channel 2i in byte i's low nibble, 2i + 1 in its high one."""
    nibbles = (w & 0x0F).astype(np.uint8)
    return np.ascontiguousarray(nibbles[:, 0::2] | (nibbles[:, 1::2] << 4))


def _quantized(x):
    """kernels.hpp's int16 activations, per group of 128: xs = max|x| / 32767, xq = rint(x * (32767 / max|x|))
    clamped to 32767 (f32 throughout)."""
    xq, xs = np.empty(x.shape, np.int64), []
    for g0 in range(0, x.shape[1], 128):
        part = x[:, g0 : g0 + 128]
        largest = np.abs(part).max(axis=1)
        inverse = np.divide(np.float32(32767), largest, out=np.zeros_like(largest), where=largest > 0)
        xq[:, g0 : g0 + 128] = np.clip(np.rint(part * inverse[:, None]), -32767, 32767)
        xs.append(largest / np.float32(32767))
    return xq, np.stack(xs, axis=1)


def _y4(x, w, scale, group):
    """kernels.hpp's y4 in float32, step by step: exact integer sums per weight group in 8 lanes (lane j:
    channels (k - g0) mod 16 in {2j, 2j + 1}), c = ws * xs rounded once, lane += float(sum) * c, one tree."""
    xq, xs = _quantized(x)
    (m, k), n = x.shape, w.shape[0]
    lanes = np.zeros((m, n, 8), np.float32)
    for g, g0 in enumerate(range(0, k, group)):
        products = xq[:, None, g0 : g0 + group] * w[None, :, g0 : g0 + group].astype(np.int64)
        sums = products.reshape(m, n, group // 16, 8, 2).sum(axis=(2, 4))
        c = scale[None, :, g] * xs[:, None, g0 // 128]
        lanes = lanes + sums.astype(np.float32) * c[:, :, None]
    pair = lambda a, b: lanes[..., a] + lanes[..., b]  # noqa: E731
    return (pair(0, 1) + pair(2, 3)) + (pair(4, 5) + pair(6, 7))


@pytest.mark.parametrize(("group", "k"), [(32, 96), (32, 384), (64, 384), (128, 384), (128, 1024)])
def test_the_int4_kernels_give_their_documented_arithmetic_bit_for_bit(library, group, k):
    rng = np.random.default_rng(group + k)
    n = 37  # not a multiple of any block: every kernel's remainder rows run
    w = rng.integers(-8, 8, (n, k)).astype(np.int8)
    scale = ((rng.random((n, k // group)) + 0.5) / 8).astype(np.float32)
    for m in (1, 3, 6):
        x = rng.standard_normal((m, k)).astype(np.float32)
        x[0, k // 3] = 300.0  # an outlier costs only its own activation group
        expected = _y4(x, w, scale, group)
        exact = x.astype(np.float64) @ (w * np.repeat(scale, group, axis=1)).T.astype(np.float64)
        bound = (
            np.abs(x).max(axis=1, keepdims=True)
            / 65534
            * (np.abs(w) * np.repeat(scale, group, axis=1)).sum(1)
        )
        assert (np.abs(expected - exact) <= bound + 1e-5 * np.abs(exact) + 1e-6).all()
        for isa in (s for s in ALL_SETS if library.supports(s)):
            for nw in (1, 2, 4):
                got = _matmul_i4(library, isa, x, _pack(w), scale, group, nw)
                np.testing.assert_array_equal(got, expected, err_msg=f"{isa}, m {m}, {nw} weight rows")


def test_the_library_refuses_an_int4_group_its_kernels_do_not_take(library):
    packed, x = _pack(np.zeros((4, 64), np.int8)), np.ones((1, 64), np.float32)
    for group in (16, 256):
        scale = np.ones((4, max(1, 64 // group)), np.float32)
        assert _call_matmul_i4(library, "generic", x, packed, scale, group, 1)[0] == -1, group
    assert _call_matmul_i4(library, "generic", x, packed, np.ones((4, 2), np.float32), 32, 1)[0] == 0
