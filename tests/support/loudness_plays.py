"""Plays for the loudness tests: speech streamed into a track in the engine's chunk sizes, and the
measure they are judged by (pyloudnorm itself, not the daemon's wrapper of it)."""

from __future__ import annotations

import numpy as np
import pyloudnorm
from script_modules import script

from qwen3tts.appliance.audio.track import HowToPlay, Track

compare = script("compare_loudness")
"""scripts/compare_loudness.py: the signals and chunking the levelling strategies were chosen on."""


def lufs(samples: np.ndarray, rate: int = 24000) -> float:
    """Integrated loudness (ITU-R BS.1770) of mono samples at `rate`."""
    return pyloudnorm.Meter(rate).integrated_loudness(np.asarray(samples, dtype=np.float64))


def streamed(pieces: list[np.ndarray], label: str = "t", **how) -> Track:
    """A closed track holding `pieces`, each put in the engine's chunks (160 ms, then 960 ms)."""
    track = Track(label)
    track.how = HowToPlay(**how)
    for piece in pieces:
        for chunk in compare.chunks(piece):
            track.put(chunk)
    track.close()
    return track
