"""The fused native code-predictor frame (native/src/predictor.hpp, runtime/native_decode/) on tiny bundles.

Against the plugin's own code-predictor graph of the same INT8 bundle (f32 activations, the exact
product): logits within the stated tolerance, next_embed equal, greedy and sampled codes equal wherever
the decision has a margin above that tolerance. Every kernel set this CPU runs gives the frame of the
portable set bit for bit, at any thread count. The sampler's semantics (code_predictor.py's docstring)
are checked on the frame's own logits. Fallbacks: a bundle the native path cannot read, or no library,
give the plugin's graph with one log line naming why. The engine speaks through it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import numpy as np
import openvino as ov
import pytest

from qwen3tts.bench import native_frame
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.native_decode.code_predictor import fused_code_predictor
from qwen3tts.runtime.native_decode.tensors import UnreadableTensors
from qwen3tts.settings_loader import load_settings

ALL_SETS = ("generic", "avx2", "avx_vnni", "avx512", "avx512_vnni")
# |native - plugin| on logits, relative to the largest |logit|: the int16 activations (native/README.md)
# against the plugin's f32 ones; measured 4e-5 to 8e-5 on the tiny bundles
LOGIT_TOLERANCE = 1e-3
# (temperature, top_k, top_p) per row: greedy, top-k, no filter, top-k + top-p, top-p only, k = 1, k > V
SAMPLING = [(0.0, 50, 1.0), (0.9, 50, 1.0), (0.9, 0, 1.0), (0.8, 50, 0.8), (1.0, 0, 0.9), (1.3, 1, 1.0)]
SAMPLING += [(0.7, 100_000, 0.95)]
# the code predictor follows the talker; the plugin's talker, which these tests do not look at, whatever
# `auto` would choose for it on this CPU (test_native_talker.py)
CPU = ["devices.talker=[CPU]", "devices.codec=[CPU]", "devices.native_talker=never"]


def _predictor(library, bundle, isa=None, threads=2):
    spec = layout.read_manifest(bundle).spec
    core = ov.Core()
    model = core.read_model(bundle / layout.CODE_PREDICTOR_XML)
    if isa is not None:
        library = replace(library, isa=isa)
    return spec, core, model, fused_code_predictor(library, model, spec.code_predictor, threads)


def _inputs(spec, rows, seed):
    rng = np.random.default_rng(seed)
    vocab, steps = spec.code_predictor.vocab_size, spec.code_predictor.num_code_groups - 1
    settings = np.array([SAMPLING[r % len(SAMPLING)] for r in range(rows)])
    return {
        cp.PAST_HIDDEN: rng.standard_normal((rows, spec.talker.hidden_size)).astype(np.float32),
        cp.CODE0: rng.integers(0, spec.talker.vocab_size, rows),
        cp.NOISE: rng.random((rows, steps, vocab), dtype=np.float32),
        cp.TEMPERATURE: settings[:, 0].astype(np.float32),
        cp.TOP_K: settings[:, 1].astype(np.int64),
        cp.TOP_P: settings[:, 2].astype(np.float32),
    }


def assert_the_engine_speaks(runtime, first_column: int = 1) -> None:
    """A greedy and a sampled request run to their frame cap through `runtime`'s engine, every code from
    `first_column` on within the codebook."""
    engine, codebook = runtime.engine, runtime.spec.code_predictor.vocab_size
    texts = {"greedy": ("Hello there.", True), "sampled": ("The train leaves from platform four.", False)}
    # EOS masked for the whole run (as the bench does): random weights may end a sampled request, or on
    # another CPU's numerics a greedy one, before its cap, and the check is that the path speaks, not when.
    no_eos = {"min_new_tokens": 10}
    handles = {
        rid: engine.submit(
            Request(id=rid, text=text, speaker="vivian", greedy=greedy, max_frames=9, sampling=no_eos)
        )
        for rid, (text, greedy) in texts.items()
    }
    for _ in range(200):
        if not engine.step():
            break
    for rid, handle in handles.items():
        assert handle.status is SequenceStatus.FINISHED_LENGTH, rid
        assert handle.frames.shape == (8, 16), rid
        assert (
            (handle.frames[:, first_column:] >= 0) & (handle.frames[:, first_column:] < codebook)
        ).all(), rid


def _gumbel_scores(logits, noise, temperature, top_k, top_p):
    """The kept tokens' Gumbel scores of one step (code_predictor.py's docstring, in float64), -inf for the
    filtered ones; plain argmax logits at temperature 0."""
    logits = logits.astype(np.float64)
    if temperature <= 0:
        return logits
    vocab = len(logits)
    order = np.lexsort((np.arange(vocab), -logits))  # larger first, ties by lower id
    k = vocab if top_k <= 0 or top_k > vocab else top_k
    kept = order[:k]
    if top_p < 1:
        probs = np.exp((logits[kept] - logits[kept[0]]) / temperature)
        probs /= probs.sum()
        above = np.concatenate([[0.0], np.cumsum(probs)[:-1]])
        kept = kept[(above < top_p) | (np.arange(k) == 0)]
    uniform = np.clip(noise.astype(np.float64), cp.NOISE_MIN, cp.NOISE_MAX)
    scores = np.full(vocab, -np.inf)
    scores[kept] = logits[kept] / temperature - np.log(-np.log(uniform[kept]))
    return scores


def _decided(scores, margin):
    top2 = np.sort(scores)[-2:]
    return top2[1] - top2[0] > margin


def _decided_code(logits_p, logits_n, noise, temperature, top_k, top_p, margin):
    """The plugin's code if rounding within `margin` cannot change it, else None. The filters (top-k, top-p)
    may keep different tokens on the two sides when their edge is a near tie: the code counts as decided
    when it wins, by more than the margin, both among the tokens either side keeps and among those both do
    (at top-k 1, a near tie of the two largest logits is then undecided, as greedy's would be)."""
    raw = _gumbel_scores(logits_p, noise, temperature, 0, 1.0)  # every token's score, unfiltered
    kept_p = np.isfinite(_gumbel_scores(logits_p, noise, temperature, top_k, top_p))
    kept_n = np.isfinite(_gumbel_scores(logits_n, noise, temperature, top_k, top_p))
    either, both = np.where(kept_p | kept_n, raw, -np.inf), np.where(kept_p & kept_n, raw, -np.inf)
    scaled = margin / min(1.0, temperature) if temperature > 0 else margin
    if np.argmax(either) != np.argmax(both) or not _decided(either, scaled):
        return None
    return int(np.argmax(either))


@pytest.mark.parametrize("shape", ["tiny", "tiny-1.7b"])
def test_the_frame_agrees_with_the_plugin_graph_of_the_same_int8_bundle(library, tiny_models, shape):
    bundle = tiny_models.bundle(shape=shape, weights="int8")
    spec, core, model, native = _predictor(library, bundle)
    exact = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
    plugin = core.compile_model(model, "CPU", exact).create_infer_request()
    feeds = _inputs(spec, rows=14, seed=3)
    result = plugin.infer(feeds)
    codes_p, embed_p, logits_p = (result[name].copy() for name in (cp.CODES, cp.NEXT_EMBED, cp.LOGITS))
    codes_n, embed_n, logits_n = native.frame(*feeds.values(), logits=True)
    scale = np.abs(logits_p).max()
    compared = 0
    margin = 4 * LOGIT_TOLERANCE * scale  # what the two sides' errors can move a difference by, and more
    for row in range(len(codes_p)):
        args = [feeds[name][row] for name in (cp.TEMPERATURE, cp.TOP_K, cp.TOP_P)]
        for step in range(codes_p.shape[1]):  # later steps follow the codes before them
            assert np.abs(logits_n[row, step] - logits_p[row, step]).max() <= LOGIT_TOLERANCE * scale
            code = _decided_code(
                logits_p[row, step], logits_n[row, step], feeds[cp.NOISE][row, step], *args, margin
            )
            if code is None:
                break  # a near tie: rounding may pick either, and every later step follows it
            assert codes_n[row, step] == codes_p[row, step] == code, (row, step)
            compared += 1
        else:  # every code equal: the same embeddings summed in the same order
            np.testing.assert_allclose(embed_n[row], embed_p[row], rtol=0, atol=1e-6)
    print(f"{shape}: {compared} of {codes_p.size} codes decided by a margin above the tolerance: all equal")
    assert compared >= codes_p.size // 2


def test_the_sampler_follows_the_documented_semantics_on_the_frames_own_logits(library, tiny_models):
    spec, _, _, native = _predictor(library, tiny_models.bundle(weights="int8"))
    feeds = _inputs(spec, rows=21, seed=5)
    codes, _, logits = native.frame(*feeds.values(), logits=True)
    checked = 0
    for row, step in np.ndindex(codes.shape):
        args = [feeds[name][row] for name in (cp.TEMPERATURE, cp.TOP_K, cp.TOP_P)]
        scores = _gumbel_scores(logits[row, step], feeds[cp.NOISE][row, step], *args)
        if _decided(scores, 1e-4):  # f32 against float64: only true near-ties may differ
            assert codes[row, step] == int(np.argmax(scores)), (row, step, args)
            checked += 1
        if args[1] == 1:  # top-k 1 is greedy whatever the noise
            assert codes[row, step] == int(np.argmax(logits[row, step]))
    assert checked >= codes.size * 9 // 10


# one row: after the first step every product has one row of x, which a set with DecodeRows takes in one
# call per chunk of weight rows (kernels.hpp); nine: every block shape of BlockDot
@pytest.mark.parametrize("rows", [9, 1])
def test_every_kernel_set_and_thread_count_gives_the_generic_frame_bit_for_bit(library, tiny_models, rows):
    bundle = tiny_models.bundle(weights="int8")
    spec = layout.read_manifest(bundle).spec
    feeds = _inputs(spec, rows=rows, seed=7)
    _, _, _, generic = _predictor(library, bundle, "generic", threads=1)
    expected = generic.frame(*feeds.values(), logits=True)
    runnable = [isa for isa in ALL_SETS if library.supports(isa)]
    assert library.isa in runnable
    for isa in runnable:
        for threads in (1, 2, 3):
            _, _, _, predictor = _predictor(library, bundle, isa, threads)
            for ours, theirs in zip(predictor.frame(*feeds.values(), logits=True), expected, strict=True):
                np.testing.assert_array_equal(ours, theirs, err_msg=f"{isa}, {threads} threads")


def test_a_batch_gives_each_row_what_it_gives_alone(library, tiny_models):
    spec, _, _, native = _predictor(library, tiny_models.bundle(weights="int8"))
    feeds = _inputs(spec, rows=5, seed=11)
    codes, embed = native.frame(*feeds.values())
    for row in range(5):
        alone = native.frame(*(value[row : row + 1] for value in feeds.values()))
        np.testing.assert_array_equal(alone[0][0], codes[row])
        np.testing.assert_array_equal(alone[1][0], embed[row])


def test_bad_inputs_are_refused_with_a_clear_error(library, tiny_models):
    spec, _, _, native = _predictor(library, tiny_models.bundle(weights="int8"))
    feeds = _inputs(spec, rows=2, seed=13)
    feeds[cp.CODE0] = np.array([0, spec.talker.vocab_size])
    with pytest.raises(ValueError, match="code0"):
        native.frame(*feeds.values())
    feeds = _inputs(spec, rows=2, seed=13)
    with pytest.raises(ValueError, match="noise"):
        native.frame(*(value[:1] if name == cp.NOISE else value for name, value in feeds.items()))
    steps = spec.code_predictor.num_code_groups - 1
    assert native.frame(*_inputs(spec, rows=1, seed=1).values())[0].shape == (1, steps)  # still usable


def test_a_bundle_without_int8_tensors_is_unreadable(library, tiny_models):
    with pytest.raises(UnreadableTensors, match="not INT8"):
        _predictor(library, tiny_models.bundle(weights="f32"))


def _runtime(bundle, *overrides):
    return load_runtime(bundle, load_settings(None, [*CPU, *overrides]))


def test_always_runs_the_code_predictor_as_the_fused_frame(library, tiny_models):
    runtime = _runtime(tiny_models.bundle(weights="int8"), "devices.native_kernels=always")
    assert runtime.runner.code_predictor_path == f"fused native {library.isa}"
    assert runtime.plan.fused == {"code_predictor": library.isa}
    assert runtime.plan.decode_paths()["code_predictor"] == f"fused native {library.isa}"
    assert "fused native frame" in runtime.plan.describe()
    spec = runtime.spec
    feeds = _inputs(spec, rows=3, seed=17)
    codes, embed = runtime.runner.code_predictor(*feeds.values())
    assert codes.shape == (3, spec.code_predictor.num_code_groups - 1)
    assert embed.shape == (3, spec.talker.hidden_size)


@pytest.mark.parametrize(
    ("weights", "overrides", "reason"),
    [
        ("f32", ["devices.native_kernels=always"], "not INT8"),
        (
            "int8",
            ["devices.native_kernels=always", "devices.native_library=/nonexistent/lib.so"],
            "not built",
        ),
        ("int8", ["devices.native_kernels=never"], "is never"),
        ("int8", ["devices.native_kernels=always", "devices.inference_precision=f32"], "exact f32"),
    ],
)
def test_the_fallbacks_keep_the_plugin_with_one_line_naming_why(
    tiny_models, caplog, weights, overrides, reason
):
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.loader"):
        runtime = _runtime(tiny_models.bundle(weights=weights), *overrides)
    assert runtime.runner.code_predictor_path == "plugin" and runtime.plan.fused == {}
    lines = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("code_predictor: the plugin")
    ]
    assert len(lines) == 1 and reason in lines[0], lines
    feeds = _inputs(runtime.spec, rows=2, seed=19)
    steps = runtime.spec.code_predictor.num_code_groups - 1
    assert runtime.runner.code_predictor(*feeds.values())[0].shape == (2, steps)


def test_the_engine_speaks_through_the_fused_frame(library, tiny_models):
    runtime = _runtime(tiny_models.bundle(weights="int8"), "devices.native_kernels=always")
    assert runtime.runner.code_predictor_path == f"fused native {library.isa}"
    assert_the_engine_speaks(runtime)


@pytest.mark.parametrize("weights", ["int8", "int4_sym_g128"])
def test_the_frame_benchmark_runs_and_reports_every_path(library, tmp_path, weights):
    out = tmp_path / "frame.json"
    args = [
        "--shape",
        "tiny",
        "--batch-sizes",
        "1,3",
        "--rounds",
        "1",
        "--threads",
        "2",
        "--weights",
        weights,
    ]
    assert native_frame.main([*args, "--work-dir", str(tmp_path), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["isa"] == library.isa and report["weight_bytes_per_frame"] > 0
    assert report["weights"] == weights
    for batch in ("1", "3"):
        paths = report["batches"][batch]
        assert len(paths) == 3 and any(name.startswith("native frame") for name in paths)
        assert all(v["median_ms"] > 0 and v["gb_per_s"] > 0 for v in paths.values())
