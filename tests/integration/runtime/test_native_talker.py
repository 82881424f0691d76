"""The native talker step (native/src/talker.hpp, runtime/native_decode/talker.py) on tiny INT8 bundles.

Against the plugin's paged talker of the same bundle (f32 activations and an f32 KV cache: the exact
product): a prefill, then decode steps of two sequences with their own block tables, mixed with a
prefill chunk, give logits and hidden states within the stated tolerance with the f16 cache, and drift no
more than the plugin's own u8 cache with the u8 one. Every kernel set this CPU runs gives the portable
set's results bit for bit with either cache, at any thread count. Bad chunks are refused with a clear
error and leave the cache as it was. The loader takes it only when devices.native_talker asks, then
without compiling the plugin's talker, and the engine speaks through it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import numpy as np
import openvino as ov
import pytest
from test_native_frame import assert_the_engine_speaks

from qwen3tts.bench import native_talker as native_talker_bench
from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs.talker import to_paged
from qwen3tts.runtime import native_plan
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.native_decode.talker import BLOCK_SIZE, build_native_talker
from qwen3tts.runtime.native_decode.tensors import UnreadableTensors
from qwen3tts.runtime.paged_talker import PagedTalker
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.settings_loader import load_settings

ALL_SETS = ("generic", "avx2", "avx_vnni", "avx512", "avx512_vnni")
# |native - plugin| relative to the largest |value| of the step: the int16 activations (native/README.md)
# and the half-precision cache against the plugin's f32 ones; measured 1e-4 to 5e-4 on the tiny bundles
TOLERANCE = 2e-3
BLOCKS = 16
# two sequences, each with its own scattered blocks (the engine's block manager hands out any ids)
TABLES = ([3, 7, 1, 12], [5, 2, 9, 0])
CPU = ["devices.talker=[CPU]", "devices.codec=[CPU]"]


def _native(library, bundle, isa=None, threads=2, cache="u8"):
    spec = layout.read_manifest(bundle).spec
    model = ov.Core().read_model(bundle / layout.TALKER_XML)
    if isa is not None:
        library = replace(library, isa=isa)
    return spec, build_native_talker(library, model, spec.talker, BLOCKS, threads, cache)


def _plugin(bundle, cache="f32"):
    core = ov.Core()
    exact = {
        "INFERENCE_PRECISION_HINT": "f32",
        "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
        "KV_CACHE_PRECISION": cache,
    }
    compiled = core.compile_model(to_paged(core.read_model(bundle / layout.TALKER_XML)), "CPU", exact)
    return PagedTalker(compiled, BLOCKS)


def _steps(hidden_size, seed):
    """Chunk lists of one conversation: both prefill (37 and 5 positions), then decodes, one step with
    the second sequence's next 3 positions as a prefill chunk beside the first's decode row."""
    rng = np.random.default_rng(seed)

    def rows(n):
        return rng.standard_normal((n, hidden_size)).astype(np.float32)

    steps = [[TalkerChunk(0, rows(37), 0, TABLES[0]), TalkerChunk(1, rows(5), 0, TABLES[1])]]
    past = [37, 5]
    for step in range(5):
        counts = [1, 3 if step == 2 else 1]
        steps.append([TalkerChunk(i, rows(counts[i]), past[i], TABLES[i]) for i in range(2)])
        past = [p + c for p, c in zip(past, counts, strict=True)]
    return steps


@pytest.mark.parametrize("shape", ["tiny", "tiny-1.7b"])
def test_prefill_and_decode_agree_with_the_plugins_paged_talker(library, tiny_models, shape):
    bundle = tiny_models.bundle(shape=shape, weights="int8")
    spec, native = _native(library, bundle, cache="f16")
    plugin = _plugin(bundle)
    assert plugin.block_size == native.block_size == BLOCK_SIZE
    worst = 0.0
    for chunks in _steps(spec.talker.hidden_size, seed=3):
        expected = plugin.step([(c.embeddings, c.past_len, c.block_table) for c in chunks])
        got = native.talker(chunks)
        for ours, theirs in zip(got, expected, strict=True):
            assert ours.shape == theirs.shape == (2, theirs.shape[1])
            error = np.abs(ours - theirs).max() / np.abs(theirs).max()
            assert error <= TOLERANCE, error
            worst = max(worst, error)
    print(f"{shape}: worst relative error {worst:.1e}")


@pytest.mark.parametrize("shape", ["tiny", "tiny-1.7b"])
def test_the_u8_cache_drifts_no_more_than_the_plugins_u8_cache(library, tiny_models, shape):
    # Both against the plugin's f32 cache, the exact product: u8 rows lose what their 256 levels cannot
    # hold (native/src/talker.hpp), as the plugin's own U8 cache does (engine.kv_cache_precision's default).
    bundle = tiny_models.bundle(shape=shape, weights="int8")
    spec, native = _native(library, bundle, cache="u8")
    assert native.cache_precision == "u8"
    exact, plugin_u8 = _plugin(bundle), _plugin(bundle, cache="u8")
    worst = {"native": 0.0, "plugin": 0.0}
    for chunks in _steps(spec.talker.hidden_size, seed=3):
        feed = [(c.embeddings, c.past_len, c.block_table) for c in chunks]
        expected = exact.step(feed)
        for path, got in (("native", native.talker(chunks)), ("plugin", plugin_u8.step(feed))):
            for ours, theirs in zip(got, expected, strict=True):
                worst[path] = max(worst[path], float(np.abs(ours - theirs).max() / np.abs(theirs).max()))
    print(f"{shape}: worst relative error, u8 caches: {worst}")
    assert 0.0 < worst["native"] <= 1.1 * worst["plugin"], worst  # (0: the cache would not be u8)


# one sequence: its decode steps have one row of x, which a set with DecodeRows takes in one call per chunk
# of weight rows (kernels.hpp); two: two rows, and a prefill chunk beside a decode row
@pytest.mark.parametrize("cache", ["u8", "f16"])
@pytest.mark.parametrize("sequences", [2, 1])
def test_every_kernel_set_and_thread_count_gives_the_generic_results_bit_for_bit(
    library, tiny_models, sequences, cache
):
    bundle = tiny_models.bundle(shape="tiny-1.7b", weights="int8")
    spec, generic = _native(library, bundle, "generic", threads=1, cache=cache)
    steps = [chunks[:sequences] for chunks in _steps(spec.talker.hidden_size, seed=7)]
    expected = [generic.talker(chunks) for chunks in steps]
    runnable = [isa for isa in ALL_SETS if library.supports(isa)]
    assert library.isa in runnable
    for isa in runnable:
        for threads in (1, 2, 3):
            _, talker = _native(library, bundle, isa, threads, cache)
            for chunks, wanted in zip(steps, expected, strict=True):
                for ours, theirs in zip(talker.talker(chunks), wanted, strict=True):
                    np.testing.assert_array_equal(ours, theirs, err_msg=f"{isa}, {threads} threads")


@pytest.mark.parametrize("cache", ["u8", "f16"])
def test_heads_of_several_register_groups_give_the_generic_results(library, tiny_models, tmp_path, cache):
    # The AVX attention adds a head's values four registers (32 values) at a time, then one register at a
    # time: the tiny checkpoints' heads of 16 never reach the first, a talker with heads of 40 takes both.
    tiny = layout.read_manifest(tiny_models.bundle(shape="tiny-1.7b", weights="int8")).spec.talker
    spec = replace(tiny, head_dim=40)
    native_talker_bench.save_random_talker(spec, tmp_path / "talker.xml", seed=11)
    model = ov.Core().read_model(tmp_path / "talker.xml")
    steps = _steps(spec.hidden_size, seed=13)
    generic = build_native_talker(replace(library, isa="generic"), model, spec, BLOCKS, 1, cache)
    expected = [generic.talker(chunks) for chunks in steps]
    for isa in (isa for isa in ALL_SETS if library.supports(isa)):
        talker = build_native_talker(replace(library, isa=isa), model, spec, BLOCKS, 2, cache)
        for chunks, wanted in zip(steps, expected, strict=True):
            for ours, theirs in zip(talker.talker(chunks), wanted, strict=True):
                np.testing.assert_array_equal(ours, theirs, err_msg=isa)


def test_bad_chunks_are_refused_with_a_clear_error_and_write_nothing(library, tiny_models):
    spec, native = _native(library, tiny_models.bundle(weights="int8"))
    steps = _steps(spec.talker.hidden_size, seed=11)
    native.talker(steps[0])
    good = steps[1][0]
    bad = [
        (TalkerChunk(1, good.embeddings, 37, [3, BLOCKS]), "block id 16 outside 0..15"),
        (TalkerChunk(1, good.embeddings, 37, [3, -1]), "block id -1"),
        (TalkerChunk(1, good.embeddings, 37, [3]), "2 needed"),
        (TalkerChunk(1, good.embeddings, 37, [3, 2**40]), "outside"),
        (TalkerChunk(1, good.embeddings[:0], 37, TABLES[0]), "new position"),
        (TalkerChunk(1, good.embeddings[:, :3], 37, TABLES[0]), "embeddings"),
    ]
    for chunk, reason in bad:
        with pytest.raises(ValueError, match=reason):
            native.talker([good, chunk])  # the good chunk beside it is not run either
    _, fresh = _native(library, tiny_models.bundle(weights="int8"))
    fresh.talker(steps[0])
    for chunks in steps[1:]:  # the refused calls left the cache as a talker that never saw them
        for ours, theirs in zip(native.talker(chunks), fresh.talker(chunks), strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_a_bundle_without_int8_tensors_is_unreadable(library, tiny_models):
    with pytest.raises(UnreadableTensors, match="not INT8"):
        _native(library, tiny_models.bundle(weights="f32"))


class RecordingCompiler(PartCompiler):
    """The real compiler, noting which components it compiles."""

    def __init__(self, *args):
        super().__init__(*args)
        self.compiled = []

    def compile(self, component, *args, **kwargs):
        self.compiled.append(component)
        return super().compile(component, *args, **kwargs)


def _runtime(bundle, *overrides):
    settings = load_settings(None, [*CPU, *overrides])
    compiler = RecordingCompiler(settings.devices, settings.model.cache_dir)
    return load_runtime(bundle, settings, compiler), compiler


def test_never_keeps_the_plugins_talker(tiny_models, caplog):
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.loader"):
        runtime, compiler = _runtime(tiny_models.bundle(weights="int8"), "devices.native_talker=never")
    assert runtime.runner.talker_path == "plugin" and "talker" in compiler.compiled
    assert runtime.plan.decode_paths()["talker"] == "plugin"
    assert any("devices.native_talker is never" in r.getMessage() for r in caplog.records)


def test_auto_takes_the_native_talker_where_measured_and_keeps_the_plugin_elsewhere(
    library, tiny_models, monkeypatch, caplog
):
    bundle = tiny_models.bundle(weights="int8")
    monkeypatch.setattr(native_plan, "NATIVE_TALKER_UP_TO", {(native_plan.cpu_vendor(), library.isa): 2})
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.loader"):
        measured, compiler = _runtime(bundle, "engine.max_num_seqs=2")
    assert measured.runner.talker_path == f"fused native {library.isa}" and "talker" not in compiler.compiled
    assert any("up to 2 sequences" in r.getMessage() for r in caplog.records)
    above, compiler = _runtime(bundle, "engine.max_num_seqs=3")  # the engine may run more than measured
    assert above.runner.talker_path == "plugin" and "talker" in compiler.compiled
    monkeypatch.setattr(native_plan, "NATIVE_TALKER_UP_TO", {})
    unmeasured, compiler = _runtime(bundle)
    assert unmeasured.runner.talker_path == "plugin" and "talker" in compiler.compiled


def test_the_engine_speaks_through_the_native_talker_without_the_plugins_talker(library, tiny_models):
    runtime, compiler = _runtime(tiny_models.bundle(weights="int8"), "devices.native_talker=always")
    assert runtime.runner.talker_path == f"fused native {library.isa}"
    assert "talker" not in compiler.compiled
    assert runtime.plan.decode_paths()["talker"] == f"fused native {library.isa}"
    assert "fused native step" in runtime.plan.describe()
    assert runtime.runner.block_size == BLOCK_SIZE and runtime.runner.kv_cache_bytes > 0
    assert_the_engine_speaks(runtime, first_column=0)


@pytest.mark.parametrize(
    ("weights", "overrides", "reason"),
    [
        ("f32", [], "not INT8"),
        ("int8", ["devices.native_library=/nonexistent/lib.so"], "not built"),
        ("int8", ["devices.inference_precision=f32"], "exact f32"),
    ],
)
def test_the_fallbacks_keep_the_plugins_talker_with_one_line_naming_why(
    tiny_models, caplog, weights, overrides, reason
):
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.loader"):
        runtime, compiler = _runtime(
            tiny_models.bundle(weights=weights), "devices.native_talker=always", *overrides
        )
    assert runtime.runner.talker_path == "plugin" and "talker" in compiler.compiled
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("talker: the plugin")]
    assert len(lines) == 1 and reason in lines[0], lines


def test_the_talker_benchmark_runs_and_reports_both_paths(library, tmp_path):
    out = tmp_path / "talker.json"
    args = ["--shape", "tiny", "--batch-sizes", "1,3", "--rounds", "2", "--context", "40", "--threads", "2"]
    args += ["--caches", "u8,f16", "--library", str(library.path)]  # (the same build twice: two talkers)
    assert native_talker_bench.main([*args, "--work-dir", str(tmp_path), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["isa"] == library.isa and report["weight_bytes_per_step"] > 0
    name = library.path.name
    native = [
        f"native step (library {i} ({name}), {library.isa}, 2 threads, {cache} cache)"
        for i in (0, 1)
        for cache in ("u8", "f16")
    ]
    for batch in ("1", "3"):
        paths = report["batches"][batch]
        assert set(paths) == {"plugin", *native}
        assert all(v["median_ms"] > 0 and v["gb_per_s"] > 0 for v in paths.values())


def test_a_request_again_reads_its_prompt_from_the_native_cache_and_speaks_the_same(library, tiny_models):
    runtime, _ = _runtime(tiny_models.bundle(weights="int8"), "devices.native_talker=always")
    engine = runtime.engine
    text = "The train to the airport leaves from platform four in ten minutes, please mind the gap."
    frames = []
    for attempt in range(2):  # the second finds the first's prompt blocks in the prefix cache
        handle = engine.submit(
            Request(id=f"again-{attempt}", text=text, speaker="vivian", greedy=True, max_frames=7)
        )
        for _ in range(200):
            if not engine.step():
                break
        assert handle.status is SequenceStatus.FINISHED_LENGTH
        frames.append(handle.frames)
    assert engine.block_manager.num_prefix_hit_tokens >= runtime.runner.block_size
    np.testing.assert_array_equal(frames[0], frames[1])
