"""bench/memory.py on a real tiny bundle: every graph's stored bytes, load deltas and the known pools."""

from __future__ import annotations

from qwen3tts.bench import memory
from qwen3tts.model import bundle as layout
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.settings_loader import load_settings


def test_breakdown_names_every_graph_with_its_stored_bytes_and_load_growth(tiny_models):
    bundle = tiny_models.bundle(weights="int8")
    settings = load_settings(None, ["engine.num_kv_blocks=7"])
    compiler = PartCompiler(settings.devices, None)
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
