"""Requests that run to their frame cap: the tiny random model samples its end of speech or not by the
rounding of the CPU's kernels (greedy decoding included), so a test that needs a sentence still running,
or stopped at its cap, takes the end token away."""

from __future__ import annotations

import dataclasses

from qwen3tts.engine.sequence import Request

NEVER = 1 << 20


def without_end(request: Request) -> Request:
    """`request` with its end-of-speech token masked for every frame (min_new_tokens past any cap)."""
    return dataclasses.replace(request, sampling={**request.sampling, "min_new_tokens": NEVER})
