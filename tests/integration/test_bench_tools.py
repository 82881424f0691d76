"""The A/B and codec-SNR bench tools on a real tiny bundle."""

from __future__ import annotations

import numpy as np
import pytest

from qwen3tts.bench import codec_layouts, codec_snr, interleaved


def test_variant_parses_bundle_and_per_graph_properties():
    variant = interleaved.Variant.parse("x=/b,INFERENCE_NUM_THREADS=1,codec.INFERENCE_PRECISION_HINT=bf16")
    assert str(variant.bundle) == "/b"
    assert variant.properties == {
        "*": {"INFERENCE_NUM_THREADS": "1"},
        "codec": {"INFERENCE_PRECISION_HINT": "bf16"},
    }
    with pytest.raises(Exception, match="label=bundle"):
        interleaved.Variant.parse("nobundle")


def test_codec_variant_in_a_variant_is_the_setting_and_never_a_compile_property():
    from qwen3tts.settings import Settings

    exact = interleaved.OverrideCompiler(Settings(), interleaved.Variant.parse("x=/b,codec_variant=f32"))
    assert exact.settings.codec_variant == "f32"
    default = interleaved.OverrideCompiler(Settings(), interleaved.Variant.parse("x=/b"))
    assert default.settings.codec_variant == "auto"
    compiled, _ = exact.compile("codec", _tiny_model(), ("CPU",))  # OpenVINO refuses unknown properties
    assert compiled.get_property("INFERENCE_PRECISION_HINT") is not None


def _tiny_model():
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([1, 4], ov.Type.f32)
    return ov.Model([ops.relu(x)], [x])


def test_interleaved_run_times_every_stage_of_every_variant_against_the_first(tiny_models):
    bundle = str(tiny_models.bundle(weights="int8"))
    variants = [
        interleaved.Variant.parse(f"a={bundle}"),
        interleaved.Variant.parse(f"b={bundle},INFERENCE_NUM_THREADS=1"),
    ]
    summary = interleaved.run(variants, batch=2, rounds=2, calls=1, context=40, clock="cpu")
    assert set(summary["variants"]) == {"a", "b"}
    for stages in summary["variants"].values():
        assert set(stages) == set(interleaved.STAGES)
        assert all(s["median_ms"] > 0 for s in stages.values())
    assert all(s["ratio_to_base"] == 1.0 for s in summary["variants"]["a"].values())
    assert "| b |" in interleaved.render(summary)


def test_codec_snr_is_infinite_for_identical_decodes_and_finite_for_a_perturbed_one():
    reference = np.sin(np.linspace(0, 20, 1000)).astype(np.float32)
    assert codec_snr.snr_db(reference, reference) == float("inf")
    noisy = reference + np.float32(0.01) * np.cos(np.linspace(0, 7, 1000)).astype(np.float32)
    assert 30 < codec_snr.snr_db(reference, noisy) < 50


def test_codec_snr_of_f32_against_itself_is_exact_on_a_bundle(tiny_models):
    result = codec_snr.measure(tiny_models.bundle(weights="f32"), codec_snr.F32, frames=6)
    assert result["snr_db"] == float("inf") and result["reference_rms"] > 0


def test_predictor_drift_is_nil_for_the_f32_graph_and_measurable_for_int8(tiny_models):
    from qwen3tts.bench import predictor_drift

    graphs = {w: tiny_models.bundle(weights=w) / "code_predictor.xml" for w in ("f32", "int8")}
    scale, (f32, int8) = predictor_drift.measure(tiny_models.checkpoint(), graphs, rows=4)
    assert scale > 1.0
    assert f32.max_logit_drift < 1e-3 and f32.codes_identical == f32.codes_total == 4 * 15
    assert 1e-3 < int8.max_logit_drift < scale and int8.mean_logit_drift <= int8.max_logit_drift


def test_codec_layouts_compares_reshaped_codecs_on_the_engine_schedule(tiny_models):
    bundle = str(tiny_models.bundle(weights="f32"))
    variant = codec_layouts.Variant.parse(f"b={bundle},sizes=3,frames=1-12,INFERENCE_NUM_THREADS=1")
    assert (variant.sizes, variant.frames, variant.properties) == (
        (3,),
        "1-12",
        {"INFERENCE_NUM_THREADS": "1"},
    )
    variants = [codec_layouts.Variant.parse(f"split={bundle}"), variant]
    rows = codec_layouts.run(variants, rounds=1, frames=26)
    split, threes = rows
    assert split["chunk_sizes"] == [1, 12] and threes["chunk_sizes"] == [3]
    assert split["max_abs_diff"] == 0.0 and 0.0 <= threes["max_abs_diff"] < 1e-4  # same audio, other chunks
    assert split["ratio"] == 1.0 and threes["cpu_ms_per_frame"] > 0 and threes["first_chunk_cpu_ms"] > 0
    assert set(split["rss_growth_mib"]) == {"VmRSS", "RssAnon", "RssFile"}
    assert "| split | 1+12 |" in codec_layouts.render(rows, 1, 26)


def test_profiles_name_the_split_codec_graphs(tiny_models):
    from qwen3tts.bench.profiling import RecordingCompiler, top_operations
    from qwen3tts.runtime.loader import load_runtime
    from qwen3tts.settings_loader import load_settings

    settings = load_settings(None, ["devices.inference_precision=f32", "engine.num_kv_blocks=4"])
    compiler = RecordingCompiler(settings.devices, None, profile=True)
    runtime = load_runtime(tiny_models.bundle(weights="f32"), settings, compiler)  # warm-up runs each graph
    tables = top_operations(compiler, count=3)
    rate = runtime.spec.codec.decode_upsample_rate
    expected = {
        "codec frame part",
        f"codec sample part ({1 * rate} samples)",
        f"codec sample part ({12 * rate} samples)",
    }
    assert expected <= set(tables)
    assert all(tables[label] and tables[label][0].ms > 0 for label in expected)


def test_interleaved_rounds_put_every_variant_in_every_slot_equally_often():
    variants = ["a", "b", "c"]
    orders = [interleaved.round_order(variants, number) for number in range(6)]
    assert all(sorted(order) == variants for order in orders)  # each round runs every variant once
    for slot in range(3):
        firsts = [order[slot] for order in orders]
        assert sorted(firsts) == ["a", "a", "b", "b", "c", "c"]
    assert interleaved.round_order([], 3) == []
