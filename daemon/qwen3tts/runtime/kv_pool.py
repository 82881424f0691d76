"""How many KV blocks the talker's pool gets: one rule for the plugin's paged talker and the native one.

The memory budget `engine.kv_cache_mib` divided by the bytes of one block (all layers, keys and values, in
the cache's own precision), but never more than `engine.max_num_seqs` sequences of the longest possible
request can fill; `engine.num_kv_blocks`, when set, overrides both (runtime/loader.py).
"""

from __future__ import annotations

from qwen3tts.settings import Settings

# Prompt positions beyond one per text character: chat template, speaker / language / codec control
# tokens; generous, since too few blocks only means preemption.
PROMPT_OVERHEAD_POSITIONS = 64


def kv_pool_blocks(bytes_per_block: int, block_size: int, settings: Settings) -> int:
    """The KV pool: the memory budget (engine.kv_cache_mib), but no more than the batch limit can ever fill.

    A sequence holds at most its prompt (about one position per text character, bounded by
    max_text_chars, plus control tokens) and max_frames generated positions.
    """
    engine = settings.engine
    budget = max(1, (engine.kv_cache_mib << 20) // bytes_per_block)
    per_seq = engine.max_text_chars + PROMPT_OVERHEAD_POSITIONS + engine.max_frames
    return min(budget, engine.max_num_seqs * -(-per_seq // block_size))
