"""The engine's defaults follow the settings' (engine/config.py says why the settings are the source)."""

from __future__ import annotations

import dataclasses

from qwen3tts.engine.config import EngineConfig, SamplingParams
from qwen3tts.runtime.loader import engine_config
from qwen3tts.settings import Settings


def test_the_engine_config_built_from_default_settings_is_the_default_engine_config():
    engine = Settings().engine
    # the bundle's compiled codec chunks are the settings' chunk sizes (commands/build.py)
    built = engine_config(Settings(), (engine.first_chunk_frames, engine.chunk_frames))
    assert built == EngineConfig()


def test_the_comparison_sees_a_default_that_drifted():
    engine = Settings().engine
    built = engine_config(Settings(), (engine.first_chunk_frames, engine.chunk_frames))
    drifted = [
        EngineConfig(first_chunk_frames=engine.first_chunk_frames + 2),
        EngineConfig(enable_prefix_caching=not engine.prefix_caching),
        EngineConfig(sampling=dataclasses.replace(SamplingParams(), top_k=engine.top_k + 1)),
    ]
    assert all(built != config for config in drifted)
