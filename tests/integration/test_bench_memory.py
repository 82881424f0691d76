"""bench/memory.py on a real tiny bundle: every graph's stored bytes, load deltas and the known pools, with
the code predictor as the plugin's compiled graph (`devices.native_kernels: never`) or as the fused native
frame (`always`), which compiles nothing and is accounted as the bundle's weights it maps plus its scratch."""

from __future__ import annotations

import gc

import pytest

from qwen3tts.bench import memory
from qwen3tts.bench.profiling import RecordingCompiler
from qwen3tts.model import bundle as layout
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

CPU = ["devices.talker=[CPU]", "devices.codec=[CPU]"]


@pytest.mark.parametrize("native_kernels", ["never", "always"])
def test_breakdown_names_every_graph_with_its_stored_bytes_and_load_growth(tiny_models, native_kernels):
    gc.collect()  # a runtime an earlier test left maps the same files: the ledger would not see them mapped
    bundle = tiny_models.bundle(weights="int8")
    overrides = [*CPU, f"devices.native_kernels={native_kernels}", "engine.num_kv_blocks=7"]
    settings = load_settings(None, overrides)
    compiler = RecordingCompiler(settings.devices, None)
    ledger = memory.RssLedger.attach(compiler)
    runtime = load_runtime(bundle, settings, compiler)
    section = memory.breakdown(runtime, ledger)

    stored = section["stored_bytes"]
    assert stored["talker"] == (bundle / layout.TALKER_XML.replace(".xml", ".bin")).stat().st_size
    codec_bins = [layout.CODEC_FRAMES_XML, *map(layout.codec_samples_xml, runtime.manifest.codec_chunks)]
    assert stored["codec"] == sum((bundle / xml.replace(".xml", ".bin")).stat().st_size for xml in codec_bins)
    assert set(section["load_rss_delta_bytes"]) >= {"talker", "code_predictor", "codec"}
    known = section["known_bytes"]
    assert known["kv_blocks"] == 7 and known["kv_pool"] == runtime.runner.kv_cache_bytes > 0
    assert known["codec_state_per_stream"] > 0
    assert section["process"]["VmRSS"] >= section["process"]["RssAnon"] > 0
    assert section["resident_by_mapping"]["[anon]"]["anonymous"] > 0
    assert set(section["released_weight_file_bytes"]) == {"talker", "code_predictor", "codec"}
    lines = memory.render(section)
    assert any(line.startswith("| talker |") for line in lines) and "KV pool" in lines[-1]
    _check_the_code_predictor(section, runtime, compiler, lines, native_kernels)


def _check_the_code_predictor(section, runtime, compiler, lines, native_kernels):
    predictor_bin = (runtime.bundle_dir / layout.CODE_PREDICTOR_XML).with_suffix(".bin")
    compiled = [part.component for part in compiler.parts]
    assert section["decode_paths"] == runtime.plan.decode_paths()
    if native_kernels == "never":
        assert compiled.count("code_predictor") == 1 and section["fused"] == {}
        assert section["decode_paths"]["code_predictor"] == "plugin"
        return
    fused = section["fused"]["code_predictor"]
    assert "code_predictor" not in compiled  # no compiled copy of its weights was ever made
    assert section["decode_paths"]["code_predictor"] == f"fused native {fused['kernel_set']}"
    # the INT8 matrices and f16 tables it reads in place are most of its file, never more
    assert predictor_bin.stat().st_size / 2 < fused["mapped_weight_bytes"] <= predictor_bin.stat().st_size
    assert predictor_bin.name in section["mapped_by_component"]["code_predictor"]
    resident = memory.resident_by_component(section)["code_predictor"]
    assert resident["file_bytes"] > 0 and predictor_bin.name in resident["files"]
    assert any(line.startswith("code_predictor: fused native frame") for line in lines)
