"""The talker's KV pool: the memory budget, capped by what the batch limit can ever fill."""

from __future__ import annotations

from qwen3tts.model.bundle import read_manifest
from qwen3tts.runtime.kv_pool import PROMPT_OVERHEAD_POSITIONS
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings


def _runtime(tiny_models, *overrides):
    settings = load_settings(None, ["devices.inference_precision=f32", *overrides])
    return load_runtime(tiny_models.bundle(weights="f32"), settings)


def test_pool_holds_max_num_seqs_full_sequences_when_the_budget_allows_more(tiny_models):
    runtime = _runtime(
        tiny_models, "engine.max_num_seqs=2", "engine.max_frames=100", "engine.max_text_chars=40"
    )
    block = runtime.runner.block_size
    per_seq = -(-(40 + PROMPT_OVERHEAD_POSITIONS + 100) // block)  # ceil
    assert runtime.runner.num_kv_blocks == 2 * per_seq


def test_budget_still_caps_the_pool_and_an_explicit_block_count_wins(tiny_models):
    capped = _runtime(tiny_models, "engine.max_num_seqs=64", "engine.kv_cache_mib=1")
    per_block = capped.runner.kv_cache_bytes // capped.runner.num_kv_blocks
    assert capped.runner.num_kv_blocks == max(1, (1 << 20) // per_block)
    explicit = _runtime(tiny_models, "engine.num_kv_blocks=5")
    assert explicit.runner.num_kv_blocks == 5


def test_the_native_talkers_pool_follows_the_same_rule_with_its_own_blocks(tiny_models):
    def native(*overrides):
        settings = load_settings(None, ["devices.talker=[CPU]", "devices.native_talker=always", *overrides])
        runtime = load_runtime(tiny_models.bundle(weights="int8"), settings)
        assert runtime.runner.talker_path.startswith("fused native")
        return runtime.runner

    full = native("engine.max_num_seqs=2", "engine.max_frames=100", "engine.max_text_chars=40")
    assert full.block_size == 32
    assert full.num_kv_blocks == 2 * -(-(40 + PROMPT_OVERHEAD_POSITIONS + 100) // 32)
    spec = read_manifest(tiny_models.bundle(weights="int8")).spec.talker
    # keys and values of every layer, 32 positions a block; a row per position and KV head: head_dim bytes
    # after an f32 scale and zero point (u8, the default), or head_dim halves
    for precision, row in (("u8", spec.head_dim + 8), ("f16", 2 * spec.head_dim)):
        limits = ("engine.max_num_seqs=64", "engine.kv_cache_mib=1")
        capped = native(*limits, f"engine.kv_cache_precision={precision}")
        per_block = spec.num_hidden_layers * 2 * 32 * spec.num_key_value_heads * row
        assert capped.kv_cache_bytes == capped.num_kv_blocks * per_block
        assert capped.num_kv_blocks == (1 << 20) // per_block
    assert native("engine.num_kv_blocks=5").num_kv_blocks == 5
