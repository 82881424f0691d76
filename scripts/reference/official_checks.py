"""Checks that a checkpoint written by `qwen3tts tiny` is what the official code expects.

A checkpoint that loads with missing keys is silently completed with random tensors by
`from_pretrained`, and a degenerate random codec makes every waveform comparison pass vacuously.
Both would make golden fixtures worthless, so the generator
stops with a CheckpointMismatchError instead. Runs only in the reference venv.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file


class CheckpointMismatchError(RuntimeError):
    """The checkpoint does not match what the official implementation loads or needs."""


def check_weights_loaded(module: torch.nn.Module, weights_file: Path) -> None:
    """Every state-dict entry of `module` must come from `weights_file`, with the same shape and values."""
    stored = load_file(str(weights_file))
    expected = module.state_dict()
    missing = sorted(set(expected) - set(stored))
    unexpected = sorted(set(stored) - set(expected))
    problems = []
    if missing:
        problems.append(f"missing {len(missing)} keys, e.g. {missing[:5]}")
    if unexpected:
        problems.append(f"unexpected {len(unexpected)} keys, e.g. {unexpected[:5]}")
    for key in sorted(set(stored) & set(expected)):
        if tuple(stored[key].shape) != tuple(expected[key].shape):
            shapes = tuple(stored[key].shape), tuple(expected[key].shape)
            problems.append(f"{key}: file shape {shapes[0]} != model {shapes[1]}")
        elif not torch.equal(stored[key].to(expected[key].dtype), expected[key]):
            problems.append(f"{key}: loaded values differ from the file")
    if problems:
        raise CheckpointMismatchError(f"{weights_file}: " + "; ".join(problems[:10]))


def check_talker_style(model, shape: str) -> dict:
    """The 1.7B style needs small_to_mtp_projection; the 0.6B style must not have one."""
    projection = model.talker.code_predictor.small_to_mtp_projection
    has_projection = isinstance(projection, torch.nn.Linear)
    if has_projection != (shape == "tiny-1.7b"):
        kind = type(projection).__name__
        raise CheckpointMismatchError(f"shape {shape}: small_to_mtp_projection is {kind}")
    return {"has_small_to_mtp_projection": has_projection, "tts_model_size": model.tts_model_size}


@torch.no_grad()
def check_codec_not_degenerate(decoder, codebook_size: int) -> dict:
    """The random codec must make audible, code-dependent, causal output (rms, clipping, one-code change)."""
    generator = torch.Generator().manual_seed(0)
    codes = torch.randint(0, codebook_size, (1, 16, 12), generator=generator)
    wave = decoder(codes)
    changed = codes.clone()
    changed[..., 6] = (changed[..., 6] + 1) % codebook_size
    moved = (decoder(changed) - wave).abs()
    samples = decoder.total_upsample
    stats = {
        "rms": float(wave.pow(2).mean().sqrt()),
        "clipped_fraction": float((wave.abs() >= 1).float().mean()),
        "change_after": float(moved[..., 6 * samples :].max()),
        "change_before": float(moved[..., : 6 * samples].max()),
    }
    if not (0.01 < stats["rms"] < 0.5) or stats["clipped_fraction"] > 0.01:
        raise CheckpointMismatchError(f"codec output is degenerate: {stats}")
    if stats["change_after"] < 1e-3 or stats["change_before"] > 1e-4:
        raise CheckpointMismatchError(f"codec output does not follow the codes causally: {stats}")
    return stats


def check_chat_slicing(input_ids, config) -> None:
    """generate() slices the prompt by position: 3 role tokens, then the text, then 5 closing ones."""
    ids = [int(i) for i in input_ids]
    role, closing = ids[:3], ids[-5:]
    # <|im_end|> \n <|im_start|>, then the role's "assistant" and "\n" again
    expected_closing_start = [config.im_end_token_id, role[2], config.im_start_token_id]
    if len(ids) < 9 or role[0] != config.im_start_token_id or closing[:3] != expected_closing_start:
        raise CheckpointMismatchError(f"prompt ids {ids} do not split into 3 role + text + 5 closing tokens")
    if closing[3:] != role[1:]:
        raise CheckpointMismatchError(f"closing tokens {closing} do not end with the role tokens {role}")
