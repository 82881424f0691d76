"""Bundles of both codec layouts load: the split graphs new builds ship and the whole chunk graphs of
older bundles (no `codec_layout` in their manifest) decode the same frames alike; an unknown layout
is refused with the rebuild command."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import openvino as ov
import pytest

from qwen3tts.errors import BundleError
from qwen3tts.model import bundle as layout
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.graphs.codec import build_codec_chunk
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

STREAM_TOLERANCE = 1e-4  # as tests/integration/model/test_codec_graph.py


def _settings():
    return load_settings(None, ["devices.inference_precision=f32", "engine.num_kv_blocks=4"])


def _older_bundle(tiny_models, path):
    """The tiny f32 bundle rewritten as a bundle from before the split: whole chunk graphs, and a
    manifest that does not know the `codec_layout` field."""
    shutil.copytree(tiny_models.bundle(weights="f32"), path)
    manifest = layout.read_manifest(path)
    for xml in layout.codec_xmls(manifest):
        for suffix in (".xml", ".bin"):
            (path / xml.replace(".xml", suffix)).unlink()
    checkpoint = load_checkpoint(tiny_models.checkpoint())
    for frames in manifest.codec_chunks:
        model = build_codec_chunk(checkpoint.spec.codec, checkpoint.codec_weights, frames)
        ov.save_model(model, path / layout.codec_chunk_xml(frames), compress_to_fp16=False)
    fields = {f.name: getattr(manifest, f.name) for f in dataclasses.fields(manifest)}
    del fields["files"], fields["codec_layout"]
    layout.write_manifest(path, fields)
    document = json.loads((path / layout.MANIFEST).read_text())
    del document["codec_layout"]
    (path / layout.MANIFEST).write_text(json.dumps(document))
    return path


def _decode(runtime, codes):
    runner = runtime.runner
    runner.codec_open(1)
    pieces = [runner.codec_decode(1, codes[:2]), runner.codec_decode(1, codes[2:14])]
    pieces.append(runner.codec_decode(1, codes[14:], final=True))
    runner.codec_close(1)
    return np.concatenate(pieces)


def test_an_older_whole_layout_bundle_still_loads_and_decodes_like_the_split_one(tiny_models, tmp_path):
    older = _older_bundle(tiny_models, tmp_path / "older")
    assert "codec_layout" not in json.loads((older / layout.MANIFEST).read_text())
    old_runtime = load_runtime(older, _settings())
    new_runtime = load_runtime(tiny_models.bundle(weights="f32"), _settings())
    assert old_runtime.manifest.codec_layout == layout.CODEC_WHOLE
    assert new_runtime.manifest.codec_layout == layout.CODEC_SPLIT
    spec = new_runtime.spec.codec
    codes = np.random.default_rng(3).integers(0, spec.codebook_size, (31, spec.num_quantizers))
    old_pcm, new_pcm = _decode(old_runtime, codes), _decode(new_runtime, codes)
    assert old_pcm.shape == new_pcm.shape == (31 * spec.decode_upsample_rate,)
    assert float(np.abs(old_pcm).max()) > 1e-3  # real audio, not two silences that agree
    assert float(np.abs(old_pcm - new_pcm).max()) < STREAM_TOLERANCE


def test_a_codec_layout_this_version_does_not_know_asks_for_a_rebuild(tiny_models, tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_models.bundle(weights="f32"), bundle)
    document = json.loads((bundle / layout.MANIFEST).read_text())
    document["codec_layout"] = "tiled"
    (bundle / layout.MANIFEST).write_text(json.dumps(document))
    with pytest.raises(BundleError, match=r"codec_layout 'tiled'.*rebuild the bundle with `qwen3tts build`"):
        load_runtime(bundle, _settings())


def test_a_whole_layout_bundle_listing_a_codec_variant_loads_its_exact_graphs(tiny_models, tmp_path):
    older = _older_bundle(tiny_models, tmp_path / "older")
    document = json.loads((older / layout.MANIFEST).read_text())
    document["codec_variants"] = [{"name": "bf16-tail", "needs": [], "snr_db": 40.0, "min_snr_db": 35.0}]
    (older / layout.MANIFEST).write_text(json.dumps(document))  # variants of the whole chunk graphs
    manifest = layout.read_manifest(older)
    assert manifest.codec_variants and layout.loadable_codec_variants(manifest) == ()
    runtime = load_runtime(older, load_settings(None, ["engine.num_kv_blocks=4", "devices.codec=[CPU]"]))
    assert runtime.plan.codec_variant == "f32"
    with pytest.raises(BundleError, match="whole-layout bundles load only their exact graphs"):
        layout.codec_graph_files(manifest, "bf16-tail")
