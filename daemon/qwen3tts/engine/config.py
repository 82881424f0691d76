"""Engine limits and the official sampling defaults.

These are the engine's own knobs; the settings package maps its YAML keys onto them
(runtime/loader.py `engine_config`). The settings' defaults are the source: they are what users get,
documented in config/qwen3tts.yaml, and the daemon builds this config from them at every start. The
defaults here only serve code that builds an engine by hand (tests, benchmarks), so they follow the
settings; tests/unit/runtime/test_engine_config.py fails if the two drift apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from qwen3tts.errors import ConfigError, RequestError


@dataclass(frozen=True)
class SamplingParams:
    """How one request samples; the defaults are the official wrapper's (`generate`)."""

    temperature: float = 0.9
    """Talker (code 0) softmax temperature; 0 means greedy."""
    top_k: int = 50
    """Talker top-k; 0 disables the filter (HF semantics)."""
    top_p: float = 1.0
    """Talker nucleus mass in (0, 1]; 1.0 disables the filter."""
    repetition_penalty: float = 1.05
    """HF repetition penalty over the code-0 tokens generated so far; 1.0 disables it."""
    subtalker_temperature: float = 0.9
    """Code-predictor (codes 1..15) temperature; 0 means greedy."""
    subtalker_top_k: int = 50
    """Code-predictor top-k; 0 disables the filter."""
    subtalker_top_p: float = 1.0
    """Code-predictor nucleus mass in (0, 1]."""
    greedy: bool = False
    """do_sample=False and subtalker_dosample=False: argmax everywhere (the penalty still applies)."""
    min_new_tokens: int = 2
    """EOS is masked until this many code-0 tokens were sampled (the wrapper hard-codes 2)."""

    @property
    def talker_greedy(self) -> bool:
        return self.greedy or self.temperature == 0

    @property
    def subtalker_greedy(self) -> bool:
        return self.greedy or self.subtalker_temperature == 0

    def validated(self) -> SamplingParams:
        """Self, or RequestError naming the first out-of-range field."""
        checks = {
            "temperature": self.temperature >= 0,
            "top_k": isinstance(self.top_k, int) and self.top_k >= 0,
            "top_p": 0 < self.top_p <= 1,
            "repetition_penalty": self.repetition_penalty > 0,
            "subtalker_temperature": self.subtalker_temperature >= 0,
            "subtalker_top_k": isinstance(self.subtalker_top_k, int) and self.subtalker_top_k >= 0,
            "subtalker_top_p": 0 < self.subtalker_top_p <= 1,
            "min_new_tokens": isinstance(self.min_new_tokens, int) and self.min_new_tokens >= 0,
        }
        for name, ok in checks.items():
            if not ok:
                raise RequestError(f"sampling.{name} out of range: {getattr(self, name)!r}")
        return self

    def with_overrides(self, overrides: Mapping[str, object]) -> SamplingParams:
        """A copy with per-request overrides applied and validated; unknown keys are a RequestError."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise RequestError(f"unknown sampling override(s) {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **overrides).validated()


@dataclass(frozen=True)
class EngineConfig:
    """Limits of the continuous-batching engine. The KV cache (blocks, block size) comes from the runner."""

    max_num_seqs: int = 4
    """Most sequences running at once (hard cap; set_max_batch() can only lower the live limit)."""
    max_num_batched_tokens: int = 256
    """Talker positions per step (decodes + prefill chunks); bounds how long one step can stall streams."""
    max_frames: int = 2048
    """Default per-request cap on sampled code-0 tokens (HF max_new_tokens): at most max_frames - 1 frames."""
    first_chunk_frames: int = 1
    """Frames decoded to PCM for the first chunk of a request (low time to first audio)."""
    chunk_frames: int = 12
    """Frames per PCM chunk after the first one."""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    """Default sampling for requests that do not override it."""
    enable_prefix_caching: bool = True
    """Share the KV blocks of identical prompt prefixes between requests (block_manager.py)."""

    def __post_init__(self) -> None:
        positive = ("max_num_seqs", "max_num_batched_tokens", "first_chunk_frames", "chunk_frames")
        for name in positive:
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"engine.{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if self.max_frames < 2:
            raise ConfigError(f"engine.max_frames must be >= 2 (N tokens give N-1 frames): {self.max_frames}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            # Every running sequence needs one decode token per step; otherwise some would starve.
            raise ConfigError(
                f"engine.max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= "
                f"engine.max_num_seqs ({self.max_num_seqs})"
            )
        try:
            self.sampling.validated()
        except RequestError as exc:
            raise ConfigError(f"engine.{exc}") from exc
