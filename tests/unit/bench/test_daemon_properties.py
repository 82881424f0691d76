"""The native benchmarks compare against the plugin as the daemon compiles it (bench/native_frame.py's
daemon_properties): on a CPU with bf16 the plugin's own default is bf16 activations, which the daemon never
runs, and a comparison against it chose the fused frame's batch limit on Zen 4 wrongly."""

import openvino as ov

from qwen3tts.bench.native_frame import daemon_properties


def test_the_benchmarks_plugin_gets_the_daemons_precision_threads_and_kv_cache():
    core = ov.Core()
    predictor = daemon_properties(core, "code_predictor", 2)
    assert predictor["INFERENCE_PRECISION_HINT"] == "f32"  # devices.inference_precision auto on a CPU
    assert predictor["INFERENCE_NUM_THREADS"] == 2 and predictor["PERFORMANCE_HINT"] == "LATENCY"
    assert "KV_CACHE_PRECISION" not in predictor
    talker = daemon_properties(core, "talker", 3, kv_cache="u8")
    assert talker["KV_CACHE_PRECISION"] == "u8" and talker["INFERENCE_NUM_THREADS"] == 3
