"""Loading warms the talker and code predictor up and gives back their weight files' pages."""

from __future__ import annotations

from resident import resident_bytes_of

from qwen3tts.model import bundle as layout
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings


def test_load_releases_the_weight_files_it_warmed_up_from(tiny_models, tmp_path):
    bundle = tiny_models.bundle(weights="int8")
    settings = load_settings(None, ["engine.num_kv_blocks=4", f"model.cache_dir={tmp_path / 'cache'}"])
    runtime = load_runtime(bundle, settings)

    released = runtime.released_weight_bytes
    talker_bin = (bundle / layout.TALKER_XML).with_suffix(".bin")
    assert released["talker"] >= talker_bin.stat().st_size  # whole mappings, page-rounded
    assert released["code_predictor"] > 0  # its .bin, or its compile-cache blob
    assert resident_bytes_of(talker_bin) == 0
