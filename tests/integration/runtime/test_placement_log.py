"""Loading a tiny bundle logs each component's placement once (runtime/parts.py), although the codec
is compiled once per chunk size: one `runs on` line and one precision line per component."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings


@pytest.mark.parametrize("native_kernels", ["never", "always"])
def test_each_component_logs_its_placement_once(tiny_models, caplog, native_kernels):
    bundle = tiny_models.bundle(weights="int8")  # always: the code predictor runs as the fused frame
    overrides = ["devices.talker=[CPU]", "devices.codec=[CPU]", f"devices.native_kernels={native_kernels}"]
    settings = load_settings(None, [*overrides, "engine.num_kv_blocks=4"])
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime"):
        runtime = load_runtime(bundle, settings)
    assert len(runtime.manifest.codec_chunks) > 1  # else the codec would not be compiled twice
    messages = [r.getMessage() for r in caplog.records]
    placed = Counter(m.split(" runs on ")[0] for m in messages if " runs on " in m)
    precision = Counter(m.split(":")[0] for m in messages if ": inference precision " in m)
    compiled = [name for name in runtime.plan.placements if name not in runtime.plan.fused]  # not compiled
    assert placed == precision == Counter(compiled)  # talker, code_predictor (unless fused), codec
    assert all(count == 1 for count in placed.values())
    assert runtime.plan.device("codec") in next(m for m in messages if m.startswith("codec runs on "))
    fused = [m for m in messages if m.startswith("code_predictor: fused native frame")]
    assert len(fused) == (1 if runtime.plan.fused else 0)  # its one line instead of a compile's two
    assert bool(runtime.plan.fused) == (native_kernels == "always")
