"""Tiny checkpoints and bundles for tests, written once per test session and shared.

Checkpoints come from our own `write_checkpoint` (the exact release layout), bundles from the real
`build_bundle`: tests exercise the same loading code a user runs on a real download.
"""

from __future__ import annotations

from pathlib import Path

from qwen3tts.model.build import build_bundle
from qwen3tts.model.tiny import write_checkpoint

# Exact f32 parity: OpenVINO otherwise picks bf16 on CPUs that have it.
PARITY_OVERRIDES = ("devices.inference_precision=f32", "engine.kv_cache_precision=f32")


class TinyModels:
    """Session cache: (variant, shape, seed) -> checkpoint dir; (+ weights) -> bundle dir."""

    def __init__(self, root: Path):
        self.root = root
        self._checkpoints: dict[tuple, Path] = {}
        self._bundles: dict[tuple, Path] = {}

    def checkpoint(self, variant: str = "custom_voice", shape: str = "tiny", seed: int = 0) -> Path:
        key = (variant, shape, seed)
        if key not in self._checkpoints:
            path = self.root / f"ckpt-{variant}-{shape}-{seed}"
            write_checkpoint(path, variant=variant, shape=shape, seed=seed)
            self._checkpoints[key] = path
        return self._checkpoints[key]

    def bundle(
        self, variant: str = "custom_voice", shape: str = "tiny", weights: str = "f32", seed: int = 0
    ) -> Path:
        key = (variant, shape, weights, seed)
        if key not in self._bundles:
            path = self.root / f"bundle-{variant}-{shape}-{weights}-{seed}"
            build_bundle(
                self.checkpoint(variant, shape, seed), path, weights=weights, report=lambda line: None
            )
            self._bundles[key] = path
        return self._bundles[key]
