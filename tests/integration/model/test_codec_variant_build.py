"""Codec variants end to end with real OpenVINO: the build gates a bf16-tail variant on its measured SNR,
the bundle vouches for its files (alternative sample parts beside the one exact frame part), it decodes
within the SNR it recorded, and the loader picks it only where it should."""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import replace

import numpy as np
import openvino as ov
import pytest

from qwen3tts.bench import codec_snr
from qwen3tts.errors import BundleError
from qwen3tts.model import bundle as layout
from qwen3tts.model.build import build_bundle
from qwen3tts.model.codec_gate import MIN_SNR_DB
from qwen3tts.model.graphs.codec import build_codec_samples
from qwen3tts.model.graphs.codec_precision import conv_modules, last_convs, lower_convs_to_bf16
from qwen3tts.runtime.codec_variants import pick_for_load
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.settings_loader import load_settings

HAS_BF16 = "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
needs_bf16 = pytest.mark.skipif(not HAS_BF16, reason="the gate can only be measured on a CPU with bf16")


@pytest.fixture(scope="module")
def gated(tiny_models, tmp_path_factory):
    """A tiny f32 bundle built with the bf16-tail variant requested (the gate runs on its weights)."""
    out = tmp_path_factory.mktemp("gated") / "bundle"
    checkpoint = tiny_models.checkpoint("custom_voice", "tiny")
    lines: list[str] = []
    manifest = build_bundle(
        checkpoint, out, weights="f32", report=lines.append, codec_variants=("bf16-tail",)
    )
    return out, manifest, lines


def test_lowering_runs_the_named_convolutions_in_bf16_and_leaves_the_graph_types_alone(tiny_models):
    from qwen3tts.model.checkpoint import load_checkpoint

    checkpoint = load_checkpoint(tiny_models.checkpoint("custom_voice", "tiny"))
    model = build_codec_samples(checkpoint.spec.codec, checkpoint.codec_weights, 2)
    before = [(o.get_any_name(), o.get_element_type()) for o in model.outputs]
    modules = conv_modules(model)
    assert modules[-1] == "decoder.decoder.6" and len(set(modules)) == len(modules)
    assert last_convs(model, 3) == modules[-3:] and last_convs(model, 0) == []
    assert lower_convs_to_bf16(model, modules[-3:]) == 3
    bf16_convs = [
        n for n in model.get_ordered_ops()
        if n.get_type_name() == "Convolution" and n.get_input_element_type(0) == ov.Type.bf16
    ]  # fmt: skip
    assert len(bf16_convs) == 3
    assert [(o.get_any_name(), o.get_element_type()) for o in model.outputs] == before
    with pytest.raises(ValueError, match=r"no convolution for decoder\.nowhere"):
        lower_convs_to_bf16(model, ["decoder.nowhere"])


@needs_bf16
def test_the_build_keeps_a_variant_only_with_its_held_out_snr_above_the_gate(gated):
    bundle, manifest, lines = gated
    assert any("(held-out gate)" in line for line in lines)
    (variant,) = manifest.codec_variants
    assert variant.name == "bf16-tail" and variant.needs == ("BF16",)
    assert variant.snr_db >= MIN_SNR_DB == variant.min_snr_db
    assert 0 < len(variant.bf16_convs) <= variant.total_convs
    for frames in manifest.codec_chunks:  # its sample parts are hashed like every other bundle file
        assert layout.codec_samples_xml(frames, "bf16-tail") in manifest.files
        samples = ov.Core().read_model(bundle / layout.codec_samples_xml(frames, "bf16-tail"))
        assert set(variant.bf16_convs) <= set(conv_modules(samples))
    # one frame part, shared with the exact sample parts: the variant adds no frame-part file
    assert {name for name in manifest.files if name.startswith("codec_frames")} == {
        layout.CODEC_FRAMES_XML,
        layout.CODEC_FRAMES_XML.replace(".xml", ".bin"),
    }
    assert layout.read_manifest(bundle) == manifest  # and the variant survives the manifest round trip
    assert "bf16-tail (bf16 in the last" in layout.describe_bundle(bundle)


@needs_bf16
def test_the_gate_searches_no_further_than_the_sample_part(tiny_models, tmp_path):
    from qwen3tts.model import codec_gate

    bundle, manifest = _exact_bundle_copy(tiny_models, tmp_path)
    core = ov.Core()
    frames_xml, samples_xml = bundle / layout.CODEC_FRAMES_XML, bundle / layout.codec_samples_xml(12)
    frame_convs = conv_modules(core.read_model(frames_xml))
    sample_convs = conv_modules(core.read_model(samples_xml))
    # a gate every precision passes: the search would lower all convolutions, but stops at the sample part
    search = codec_gate.Bf16TailSearch(core, frames_xml, samples_xml, manifest.spec.codec, -1000.0)
    result = search.run(lambda line: None)
    assert frame_convs and result.total_convs == len(frame_convs) + len(sample_convs)
    assert result.bf16_convs == tuple(sample_convs)
    assert search.snr(0, seed=2) == float("inf")  # no bf16 convolution: the exact split decode itself


@needs_bf16
def test_the_variant_decodes_within_the_snr_it_recorded_and_is_not_exact(gated):
    bundle, manifest, _ = gated
    (variant,) = manifest.codec_variants
    # other codes than the gate's and both chunk sizes (the gate streams the 12-frame graph only)
    result = codec_snr.measure(bundle, codec_snr.F32, frames=50, seed=11, variant="bf16-tail")
    assert np.isfinite(result["snr_db"])  # bf16 really ran: not the exact decode
    assert abs(result["snr_db"] - variant.snr_db) < 3.0
    assert result["snr_db"] > MIN_SNR_DB - 2.0


@needs_bf16
def test_the_loader_picks_the_variant_on_this_cpu_and_f32_refuses_it(gated, caplog):
    bundle, manifest, _ = gated
    settings = load_settings(None, [])
    compiler = PartCompiler(settings.devices, available=["CPU"])
    assert pick_for_load(compiler, manifest.codec_variants, ("CPU",)) == "bf16-tail"
    exact = PartCompiler(replace(settings.devices, codec_variant="f32"), available=["CPU"])
    assert pick_for_load(exact, manifest.codec_variants, ("CPU",)) is None
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.codec_variants"):
        runtime = load_runtime(bundle, load_settings(None, ["devices.codec=[CPU]"]))
    assert any("codec graphs: bf16-tail" in r.getMessage() for r in caplog.records)
    assert runtime.plan.codec_variant == "bf16-tail"


def test_a_bundle_without_variants_loads_the_exact_graphs(tiny_models, caplog):
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    manifest = layout.read_manifest(bundle)
    assert manifest.codec_variants == ()
    assert "codec variants: f32 (exact)\n" in layout.describe_bundle(bundle)
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.codec_variants"):
        runtime = load_runtime(bundle, load_settings(None, ["devices.codec=[CPU]"]))
    assert any("codec graphs: f32 exact" in r.getMessage() for r in caplog.records)
    assert runtime.plan.codec_variant == "f32"


def test_a_malformed_variant_entry_is_a_bundle_error_naming_the_field(tiny_models, tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), bundle)
    document = json.loads((bundle / layout.MANIFEST).read_text())
    document["codec_variants"] = [{"name": "bf16-tail", "needs": ["BF16"]}]  # no snr_db
    (bundle / layout.MANIFEST).write_text(json.dumps(document))
    with pytest.raises(BundleError, match=r"codec_variants\[0\]\.snr_db"):
        layout.read_manifest(bundle)
    good = {"name": "bf16-tail", "needs": ["BF16"], "snr_db": 40.0, "min_snr_db": 35.0}
    document["codec_variants"] = [good]  # its graphs are not among the manifest's hashed files
    (bundle / layout.MANIFEST).write_text(json.dumps(document))
    with pytest.raises(BundleError, match=r"codec_samples_1\.bf16-tail\.xml is not in the manifest"):
        layout.read_manifest(bundle)
    document["codec_variants"] = [{**good, "name": "../talker"}]
    (bundle / layout.MANIFEST).write_text(json.dumps(document))
    with pytest.raises(BundleError, match="not a plain lower-case word"):
        layout.read_manifest(bundle)
    document["codec_variants"] = "bf16-tail"
    (bundle / layout.MANIFEST).write_text(json.dumps(document))
    with pytest.raises(BundleError, match="codec_variants"):
        layout.read_manifest(bundle)


class CoreWith:
    """An OpenVINO Core stand-in that reports the given CPU capabilities."""

    def __init__(self, capabilities):
        self.capabilities = capabilities

    def get_property(self, device, name):
        assert (device, name) == ("CPU", "OPTIMIZATION_CAPABILITIES")
        return list(self.capabilities)


@needs_bf16
def test_doctor_says_which_codec_graphs_this_cpu_would_load(gated):
    from qwen3tts.doctor.daemon import codec_variant_check
    from qwen3tts.settings import DeviceSettings

    bundle, _, _ = gated
    (check,) = codec_variant_check(bundle, DeviceSettings(), CoreWith(["BF16", "FP32", "INT8"]))
    assert check.ok and check.detail.startswith("bf16-tail on the CPU")
    (check,) = codec_variant_check(bundle, DeviceSettings(), CoreWith(["FP32", "INT8"]))
    assert check.detail.startswith("f32 exact on the CPU") and "need BF16" in check.detail
    assert codec_variant_check(bundle.parent / "missing", DeviceSettings(), CoreWith(["BF16"])) == []


class NoBf16Core(ov.Core):
    def get_property(self, device, name):
        if name == "OPTIMIZATION_CAPABILITIES":
            return ["FP32", "INT8"]
        return super().get_property(device, name)


def _exact_bundle_copy(tiny_models, tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), bundle)
    return bundle, layout.read_manifest(bundle)


def test_without_bf16_on_the_building_cpu_no_variant_is_built(tiny_models, tmp_path, monkeypatch):
    from qwen3tts.model import codec_gate

    bundle, manifest = _exact_bundle_copy(tiny_models, tmp_path)
    monkeypatch.setattr(codec_gate.ov, "Core", NoBf16Core)
    lines: list[str] = []
    assert (
        codec_gate.build_bf16_tail(bundle, manifest.spec.codec, manifest.codec_chunks, lines.append) is None
    )
    assert "this CPU has no bf16" in lines[-1]
    assert not list(bundle.glob("codec_samples_*.bf16-tail.*"))


def test_a_failing_variant_build_leaves_no_files_and_does_not_fail(tiny_models, tmp_path, monkeypatch):
    from qwen3tts.model import codec_gate

    bundle, manifest = _exact_bundle_copy(tiny_models, tmp_path)

    class Half(codec_gate.Bf16TailSearch):
        def __init__(self, core, frames_xml, samples_xml, spec, min_snr_db=codec_gate.MIN_SNR_DB, **_):
            (bundle / layout.codec_samples_xml(2, "bf16-tail")).write_text("<half/>")  # a partial write
            raise RuntimeError("plugin exploded")

    monkeypatch.setattr(codec_gate, "Bf16TailSearch", Half)
    monkeypatch.setattr(codec_gate.ov, "Core", lambda: CoreWith(["BF16", "FP32"]))
    lines: list[str] = []
    assert (
        codec_gate.build_bf16_tail(bundle, manifest.spec.codec, manifest.codec_chunks, lines.append) is None
    )
    assert "plugin exploded" in lines[-1]
    assert not list(bundle.glob("codec_samples_*.bf16-tail.*"))
