"""The talker's KV pool: the memory budget, capped by what the batch limit can ever fill."""

from __future__ import annotations

from qwen3tts.runtime.loader import PROMPT_OVERHEAD_POSITIONS, load_runtime
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
