"""Loading warms the talker, code predictor and codec up and gives back their weight files' pages.

The code predictor either way `devices.native_kernels` sends it: the plugin's compiled graph gives its file
back after its warm-up; the fused native frame, which reads the bundle's file at every frame and compiles
nothing, keeps those pages and gives nothing back.
"""

from __future__ import annotations

import numpy as np
import pytest
from resident import resident_bytes_of

from qwen3tts.model import bundle as layout
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

CPU = ["devices.talker=[CPU]", "devices.codec=[CPU]"]


@pytest.mark.parametrize("native_kernels", ["never", "always"])
def test_load_releases_the_weight_files_it_warmed_up_from(tiny_models, tmp_path, native_kernels):
    bundle = tiny_models.bundle(weights="int8")
    overrides = [*CPU, f"devices.native_kernels={native_kernels}", "engine.num_kv_blocks=4"]
    overrides.append("devices.native_talker=never")  # the plugin's talker, whose pages the warm-up gives back
    settings = load_settings(None, [*overrides, f"model.cache_dir={tmp_path / 'cache'}"])
    runtime = load_runtime(bundle, settings)

    released = runtime.released_weight_bytes
    talker_bin = (bundle / layout.TALKER_XML).with_suffix(".bin")
    predictor_bin = (bundle / layout.CODE_PREDICTOR_XML).with_suffix(".bin")
    assert released["talker"] >= talker_bin.stat().st_size  # whole mappings, page-rounded
    assert resident_bytes_of(talker_bin) == 0
    if runtime.plan.fused:  # always: the frame reads the file in place, so its pages stay
        assert runtime.plan.fused == {"code_predictor": runtime.runner.fused_code_predictor.isa}
        assert released["code_predictor"] == 0 and resident_bytes_of(predictor_bin) > 0
    else:
        assert native_kernels == "never"
        assert released["code_predictor"] >= predictor_bin.stat().st_size  # its .bin (the cache was empty)
        assert resident_bytes_of(predictor_bin) == 0


def _codec_bins(bundle, manifest):
    return [(bundle / xml).with_suffix(".bin") for xml in layout.codec_xmls(manifest)]


def test_load_releases_the_codec_graphs_after_their_one_warm_up(tiny_models, tmp_path, caplog):
    bundle = tiny_models.bundle(weights="int8")
    settings = load_settings(None, ["engine.num_kv_blocks=4"])
    with caplog.at_level("INFO", logger="qwen3tts.runtime"):
        runtime = load_runtime(bundle, settings)

    bins = _codec_bins(bundle, runtime.manifest)
    assert runtime.manifest.codec_layout == layout.CODEC_SPLIT and len(bins) == 3  # frame part + 2 sizes
    assert runtime.released_weight_bytes["codec"] >= sum(b.stat().st_size for b in bins)
    assert all(resident_bytes_of(b) == 0 for b in bins)
    warmed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("codec: warmed up")]
    assert len(warmed) == 1 and "released" in warmed[0]  # one warm-up, the release after it


def test_a_codec_loaded_from_the_compile_cache_releases_its_own_blobs(tiny_models, tmp_path):
    bundle = tiny_models.bundle(weights="int8")
    settings = load_settings(None, ["engine.num_kv_blocks=4", f"model.cache_dir={tmp_path / 'cache'}"])
    load_runtime(bundle, settings)  # fills the cache
    runtime = load_runtime(bundle, settings)  # imports the blobs: the weights are mapped from there

    blobs = list((tmp_path / "cache").rglob("*.blob"))
    assert blobs and all(resident_bytes_of(blob) == 0 for blob in blobs)
    spec = runtime.spec.codec
    codes = np.random.default_rng(1).integers(0, spec.codebook_size, (12, spec.num_quantizers))
    runtime.runner.codec_open(1)
    pcm = runtime.runner.codec_decode(1, codes, final=True)  # pages fault back in from the page cache
    runtime.runner.codec_close(1)
    assert pcm.shape == (12 * spec.decode_upsample_rate,) and float(np.abs(pcm).max()) > 0
