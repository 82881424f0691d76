"""Loaded runtimes kept for the tests of a module, each lent to one test at a time with a fresh engine.

A load compiles every graph of the bundle and warms each up (1-2 s of CPU on the tiny bundle); tests
that only drive the engine or the servers over it need not pay that per test. What a lent runtime
carries over from its last user is what a loaded one holds: the compiled graphs and their infer
requests, the KV cache tensors (every position a sequence reads is one it wrote first), the codec's
decoded-context starts (a pure function of the context). What belongs to requests is the engine's: a
new `Engine` per loan, so no queue, block table or prefix cache is shared. A runtime whose engine thread
is still alive when it comes back is dropped, never lent again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from qwen3tts.engine.engine import Engine
from qwen3tts.runtime.loader import Runtime, engine_config, load_runtime
from qwen3tts.settings import Settings


def _key(bundle: Path, settings: Settings) -> tuple[str, ...]:
    """What load_runtime reads: the bundle, the devices, the model, the engine and the voice settings."""
    return (str(bundle), *(repr(part) for part in (settings.devices, settings.model, settings.engine,
                                                   settings.voice)))  # fmt: skip


class RuntimeShelf:
    def __init__(self) -> None:
        self._idle: dict[tuple[str, ...], list[Runtime]] = {}
        self.loads = 0

    def lend(self, bundle: Path, settings: Settings) -> Runtime:
        """A runtime of `bundle` loaded with `settings`, with an engine no one else has used."""
        idle = self._idle.get(_key(bundle, settings))
        if not idle:
            self.loads += 1
            return load_runtime(bundle, settings)
        runtime = idle.pop()
        config = engine_config(settings, runtime.manifest.codec_chunks)
        return dataclasses.replace(runtime, engine=Engine(runtime.runner, runtime.prompt_builder, config))

    def give_back(self, bundle: Path, settings: Settings, runtime: Runtime) -> None:
        """`runtime`, its engine stopped (or only ever stepped by hand), to lend again."""
        thread = runtime.engine._thread  # (a test helper: is the engine's loop still running?)
        if thread is None or not thread.is_alive():
            self._idle.setdefault(_key(bundle, settings), []).append(runtime)
