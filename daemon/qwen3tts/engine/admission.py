"""Submit-time checks: a request and its prompt are valid before they reach the step loop.

Bad input raises RequestError here, in the caller's thread, never later inside a step where it
could disturb other requests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import EngineConfig, SamplingParams
from qwen3tts.engine.sequence import Prompt, Request
from qwen3tts.errors import RequestError


def validate_request(request: Request, config: EngineConfig) -> tuple[SamplingParams, int]:
    """(sampling parameters, max frames) of a well-formed request."""
    if not isinstance(request.id, str) or not request.id:
        raise RequestError("request id must be a non-empty string")
    if not isinstance(request.text, str) or not request.text.strip():
        raise RequestError(f"request {request.id!r}: text must be a non-empty string")
    if isinstance(request.rank, bool) or not isinstance(request.rank, int):
        raise RequestError(f"{request.id!r}: rank must be an integer, not {request.rank!r}")
    if not isinstance(request.urgent, bool):
        raise RequestError(f"{request.id!r}: urgent must be true or false, not {request.urgent!r}")
    if request.seed is not None and (not isinstance(request.seed, int) or request.seed < 0):
        raise RequestError(f"request {request.id!r}: seed must be a non-negative integer or None")
    max_frames = config.max_frames if request.max_frames is None else request.max_frames
    if not isinstance(max_frames, int) or max_frames < 2:
        raise RequestError(f"request {request.id!r}: max_frames must be an integer >= 2")
    first = request.first_chunk_frames
    if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 1):
        raise RequestError(f"request {request.id!r}: first_chunk_frames must be an integer >= 1 or None")
    params = config.sampling.with_overrides(request.sampling)
    if request.greedy:
        params = dataclasses.replace(params, greedy=True)
    return params, max_frames


def build_prompt(
    request: Request,
    prompt_builder: Callable[[Request], Prompt],
    hidden: int,
    block_manager: BlockManager,
) -> Prompt:
    """The request's prompt, checked for shape, finiteness and fit in the KV cache."""
    try:
        prompt = prompt_builder(request)
    except ValueError as exc:
        raise RequestError(f"request {request.id!r}: {exc}") from exc
    emb, text, pad = prompt.embeddings, prompt.trailing_text, prompt.pad_vector
    if emb.ndim != 2 or emb.shape[0] < 1 or emb.shape[1] != hidden:
        raise RequestError(f"request {request.id!r}: prompt embeddings {emb.shape} are not (P, {hidden})")
    if text.ndim != 2 or text.shape[1] != hidden or pad.shape != (hidden,):
        raise RequestError(f"request {request.id!r}: text-track vectors do not have width {hidden}")
    if not (np.isfinite(emb).all() and np.isfinite(text).all() and np.isfinite(pad).all()):
        raise RequestError(f"request {request.id!r}: prompt contains non-finite values")
    if block_manager.blocks_for(emb.shape[0] + 1) > block_manager.num_blocks:
        raise RequestError(f"request {request.id!r}: prompt of {emb.shape[0]} positions exceeds the KV cache")
    return prompt
