"""The fused code-predictor frame on INT4 weights (the int4-cp bundles: INT4_SYM, a scale per group of input
channels; native/src/kernels.hpp's y4).

The INT4 kernels against a float32 statement of their documented arithmetic, bit for bit, on every kernel
set and blocking; the frame against the plugin's own INT4 code-predictor graph of the same tiny bundle, and
of a mixed one (INT4 layers, INT8 heads), with f32 activations (the exact product): logits within the
stated tolerance, codes equal wherever the decision has a margin above it; every kernel set and thread
count bit-identical to generic; a runtime under `always` runs the frame and the engine speaks through it,
`auto` keeps the plugin's graph; a tensor in INT4 groups the kernels do not take falls back to the
plugin's graph with one log line naming it.
"""

from __future__ import annotations

import ctypes
import json
import logging
import shutil

import numpy as np
import openvino as ov
import pytest
from test_native_frame import ALL_SETS, _decided_code, _inputs, _predictor, _runtime, assert_the_engine_speaks

from qwen3tts.model import bundle as layout
from qwen3tts.model.compression import save_graph
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.runtime import native_plan
from qwen3tts.runtime.native_decode.code_predictor import fused_code_predictor
from qwen3tts.runtime.native_decode.tensors import (
    Int4Weights,
    Int8Weights,
    UnreadableTensors,
    read_tensors,
)

# |native - plugin| on logits, relative to the largest |logit|: the int16 activations, as for INT8
# (test_native_frame.py), against the plugin's f32 ones on the same INT4 weights; measured 8e-5 to 9e-5
# on the tiny bundles
LOGIT_TOLERANCE = 1e-3
ALWAYS = "devices.native_kernels=always"


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
    channels (k - g0) mod 32 in [4j, 4j + 4)), c = ws * xs rounded once, lane += float(sum) * c, one tree."""
    xq, xs = _quantized(x)
    (m, k), n = x.shape, w.shape[0]
    lanes = np.zeros((m, n, 8), np.float32)
    for g, g0 in enumerate(range(0, k, group)):
        products = xq[:, None, g0 : g0 + group] * w[None, :, g0 : g0 + group].astype(np.int64)
        sums = products.reshape(m, n, group // 32, 8, 4).sum(axis=(2, 4))
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
    for m in (1, 2, 3, 4, 6):  # 1 to 4: a decode step's rows in one call (DecodeRows4)
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


def _mixed_predictor(library, tiny_models, tmp_path):
    """The tiny code predictor with INT4 layers and INT8 heads (the `+heads8` mixed policy), as an IR."""
    spec = layout.read_manifest(tiny_models.bundle(weights="f32")).spec
    core = ov.Core()
    model = core.read_model(tiny_models.bundle(weights="f32") / layout.CODE_PREDICTOR_XML)
    save_graph(model, tmp_path / "mixed.xml", "int4_sym_g128+heads8")
    model = core.read_model(tmp_path / "mixed.xml")
    return spec, core, model, fused_code_predictor(library, model, spec.code_predictor, 2)


@pytest.mark.parametrize(("shape", "mixed"), [("tiny", False), ("tiny-1.7b", False), ("tiny", True)])
def test_the_int4_frame_agrees_with_the_plugin_graph_of_the_same_weights(
    library, tiny_models, tmp_path, shape, mixed
):
    if mixed:
        spec, core, model, native = _mixed_predictor(library, tiny_models, tmp_path)
    else:
        spec, core, model, native = _predictor(library, tiny_models.bundle(shape=shape, weights="int4-cp"))
    found = read_tensors(model, spec.code_predictor)
    layers = [m for layer in found.layers for m in layer.values()]
    layers += [found.projection] if found.projection is not None else []
    assert all(isinstance(m, Int4Weights) for m in layers), "the layers are INT4"
    assert all(isinstance(m, Int8Weights if mixed else Int4Weights) for m in found.heads)
    exact = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
    plugin = core.compile_model(model, "CPU", exact).create_infer_request()
    feeds = _inputs(spec, rows=14, seed=3)
    result = plugin.infer(feeds)
    codes_p, embed_p, logits_p = (result[name].copy() for name in (cp.CODES, cp.NEXT_EMBED, cp.LOGITS))
    codes_n, embed_n, logits_n = native.frame(*feeds.values(), logits=True)
    scale, compared, worst = np.abs(logits_p).max(), 0, 0.0
    margin = 4 * LOGIT_TOLERANCE * scale  # what the two sides' errors can move a difference by, and more
    for row in range(len(codes_p)):
        args = [feeds[name][row] for name in (cp.TEMPERATURE, cp.TOP_K, cp.TOP_P)]
        for step in range(codes_p.shape[1]):  # later steps follow the codes before them
            worst = max(worst, np.abs(logits_n[row, step] - logits_p[row, step]).max() / scale)
            assert worst <= LOGIT_TOLERANCE, (row, step)
            code = _decided_code(
                logits_p[row, step], logits_n[row, step], feeds[cp.NOISE][row, step], *args, margin
            )
            if code is None:
                break  # a near tie: rounding may pick either, and every later step follows it
            assert codes_n[row, step] == codes_p[row, step] == code, (row, step)
            compared += 1
        else:  # every code equal: the same embeddings summed in the same order
            np.testing.assert_allclose(embed_n[row], embed_p[row], rtol=0, atol=1e-6)
    label = f"{shape}{', INT8 heads' if mixed else ''}"
    print(f"{label}: max |native - plugin| {worst:.1e} of the logits' scale, {compared} codes compared")
    assert compared >= codes_p.size // 2


def test_every_kernel_set_and_thread_count_gives_the_generic_int4_frame_bit_for_bit(library, tiny_models):
    bundle = tiny_models.bundle(weights="int4-cp")
    spec = layout.read_manifest(bundle).spec
    runnable = [isa for isa in ALL_SETS if library.supports(isa)]
    predictors = {(isa, t): _predictor(library, bundle, isa, t)[3] for isa in runnable for t in (1, 2)}
    for rows in (1, 2, 3, 9):  # 9: more than 8 rows of x at step 0, the kernels' widest blocks
        feeds = _inputs(spec, rows=rows, seed=rows)
        expected = predictors["generic", 1].frame(*feeds.values(), logits=True)
        for (isa, threads), predictor in predictors.items():
            for ours, theirs in zip(predictor.frame(*feeds.values(), logits=True), expected, strict=True):
                np.testing.assert_array_equal(ours, theirs, err_msg=f"{isa}, {threads} threads, {rows} rows")


def test_always_runs_the_int4_frame_and_the_engine_speaks_through_it(library, tiny_models):

    runtime = _runtime(tiny_models.bundle(weights="int4-cp"), ALWAYS)
    assert runtime.runner.code_predictor_path == f"fused native {library.isa}"
    assert runtime.plan.decode_paths()["code_predictor"] == f"fused native {library.isa}"
    assert_the_engine_speaks(runtime)


@pytest.fixture(scope="module")
def g16_bundle(tiny_models, tmp_path_factory):
    """The int4-cp bundle with its code predictor compressed in INT4 groups of 16 (the kernels take 32 to
    128), its manifest's label and hashes otherwise as built: what the frame must refuse by the tensor."""
    bundle = tmp_path_factory.mktemp("int4") / "g16"
    shutil.copytree(tiny_models.bundle(weights="int4-cp"), bundle)
    model = ov.Core().read_model(tiny_models.bundle(weights="f32") / layout.CODE_PREDICTOR_XML)
    save_graph(model, bundle / layout.CODE_PREDICTOR_XML, "int4_sym_g16")
    manifest = json.loads((bundle / layout.MANIFEST).read_text())
    for name in manifest["files"]:
        if name.startswith(layout.CODE_PREDICTOR_XML.removesuffix(".xml")):
            manifest["files"][name] = layout.sha256_file(bundle / name)
    (bundle / layout.MANIFEST).write_text(json.dumps(manifest))
    return bundle


def test_an_int4_group_the_kernels_do_not_take_is_unreadable_naming_the_tensor(library, g16_bundle):
    spec = layout.read_manifest(g16_bundle).spec
    model = ov.Core().read_model(g16_bundle / layout.CODE_PREDICTOR_XML)
    with pytest.raises(
        UnreadableTensors, match=r"layers\.0\.self_attn\.qkv_proj\.weight is INT4 in groups of 16"
    ):
        fused_code_predictor(library, model, spec.code_predictor, 1)


def test_an_int4_group_the_kernels_do_not_take_falls_back_with_one_line_naming_it(g16_bundle, caplog):
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.loader"):
        runtime = _runtime(g16_bundle, ALWAYS)
    assert runtime.runner.code_predictor_path == "plugin" and runtime.plan.fused == {}
    lines = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("code_predictor: the plugin")
    ]
    assert len(lines) == 1 and "groups of 16" in lines[0], lines
    codes, _ = runtime.runner.code_predictor(*_inputs(runtime.spec, rows=2, seed=19).values())
    assert codes.shape == (2, runtime.spec.code_predictor.num_code_groups - 1)


def test_auto_keeps_the_plugin_graph_for_int4_where_the_frame_is_not_measured(
    tiny_models, caplog, monkeypatch
):
    monkeypatch.setattr(native_plan, "FUSED_INT4_FASTER_UP_TO", {})
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.loader"):
        runtime = _runtime(tiny_models.bundle(weights="int4-cp"))
    assert runtime.runner.code_predictor_path == "plugin" and runtime.plan.fused == {}
    lines = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("code_predictor: the plugin")
    ]
    assert len(lines) == 1 and "INT4 frame is not measured faster" in lines[0], lines


def test_auto_takes_the_int4_frame_up_to_its_measured_batch_and_the_int4_graph_above(
    library, tiny_models, monkeypatch
):
    monkeypatch.setattr(native_plan, "FUSED_INT4_FASTER_UP_TO", {(native_plan.cpu_vendor(), library.isa): 2})
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {})  # INT8's table plays no part
    runtime = _runtime(tiny_models.bundle(weights="int4-cp"))
    assert runtime.runner.code_predictor_path == f"fused native {library.isa} up to batch 2, plugin above"
    fused, rows_seen = runtime.runner.fused_code_predictor, []
    frame = fused.frame
    monkeypatch.setattr(
        fused, "frame", lambda hidden, *rest: rows_seen.append(len(hidden)) or frame(hidden, *rest)
    )
    steps = runtime.spec.code_predictor.num_code_groups - 1
    for rows in (1, 3, 2):
        codes, _ = runtime.runner.code_predictor(*_inputs(runtime.spec, rows=rows, seed=rows).values())
        assert codes.shape == (rows, steps)
    assert rows_seen == [1, 2]  # 3 rows went to the plugin's INT4 graph
