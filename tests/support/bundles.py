"""Tiny checkpoints and bundles for tests, written once per test session and shared.

Checkpoints come from our own `write_checkpoint` (the exact release layout), bundles from the real
`build_bundle`: tests exercise the same loading code a user runs on a real download. Under pytest-xdist
the workers of one session share them (the folder is the session's, above each worker's own): the first
worker to ask for one writes it while holding its lock file, the others wait and read it; a test never
modifies one (it copies it first).
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

from qwen3tts.model.build import build_bundle
from qwen3tts.model.tiny import write_checkpoint

# Exact f32 parity: OpenVINO otherwise picks bf16 on CPUs that have it.
PARITY_OVERRIDES = ("devices.inference_precision=f32", "engine.kv_cache_precision=f32")


def made_once(path: Path, make: Callable[[Path], object]) -> Path:
    """`path`, made by `make(path)` unless this or another process of the session made it already.

    `<path>.done` says it is complete (a process that died while making one leaves none, and the next
    one asking makes it again); `<path>.lock` lets one process make it while the others wait."""
    done = path.with_name(f"{path.name}.done")
    if done.exists():
        return path
    with path.with_name(f"{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(path, ignore_errors=True)
            make(path)
            done.touch()
    return path


class TinyModels:
    """Session cache: (variant, shape, seed) -> checkpoint dir; (+ weights) -> bundle dir."""

    def __init__(self, root: Path):
        self.root = root

    def checkpoint(self, variant: str = "custom_voice", shape: str = "tiny", seed: int = 0) -> Path:
        return made_once(
            self.root / f"ckpt-{variant}-{shape}-{seed}",
            lambda path: write_checkpoint(path, variant=variant, shape=shape, seed=seed),
        )

    def bundle(
        self, variant: str = "custom_voice", shape: str = "tiny", weights: str = "f32", seed: int = 0
    ) -> Path:
        checkpoint = self.checkpoint(variant, shape, seed)
        return made_once(
            self.root / f"bundle-{variant}-{shape}-{weights}-{seed}", self._build(checkpoint, weights)
        )

    def build_report(
        self, variant: str = "custom_voice", shape: str = "tiny", weights: str = "f32", seed: int = 0
    ) -> list[str]:
        """The progress lines `build_bundle` reported while it made that bundle (made now if it is not)."""
        bundle = self.bundle(variant, shape, weights, seed)
        return bundle.with_name(f"{bundle.name}.report").read_text(encoding="utf-8").splitlines()

    @staticmethod
    def _build(checkpoint: Path, weights: str) -> Callable[[Path], None]:
        def build(path: Path) -> None:
            lines: list[str] = []
            build_bundle(checkpoint, path, weights=weights, report=lines.append)
            path.with_name(f"{path.name}.report").write_text("\n".join(lines), encoding="utf-8")

        return build
