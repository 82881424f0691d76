"""The samples of a media announcement (pre-rendered audio, e.g. a renderer's), kept with its record.

A runtime part of the `Announcement` (announcement.py `media`): never spooled. How it plays is media.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from qwen3tts.appliance.audio.sinks import MODEL_RATE

SEGMENT_S = 1.0
"""Seconds per segment: how far a takeover may wait, and how much a barged-in stream plays again."""
SEGMENT = int(SEGMENT_S * MODEL_RATE)


@dataclass(frozen=True, eq=False)
class MediaAudio:
    """The samples of a media announcement and who hears of its steps."""

    pcm: np.ndarray
    """float32 mono at the model rate (24 kHz), read-only."""
    listener: Callable[[str, str], None] | None = None
    """listener(event, reason): each lifecycle event of the announcement (not a zone's `error` while
    others play on), called on the announcer's thread; it must not block."""

    @property
    def seconds(self) -> float:
        return len(self.pcm) / MODEL_RATE

    @property
    def segments(self) -> int:
        return max(1, -(-len(self.pcm) // SEGMENT))


def media_pcm(pcm: np.ndarray) -> np.ndarray:
    """A private, read-only float32 mono copy (the caller's array may change after it handed it on)."""
    out = np.array(pcm, dtype=np.float32).reshape(-1)
    out.setflags(write=False)
    return out
