"""Chimes before announcements: the project's default chimes, made with numpy, and sound files in any format.

The defaults are synthesised deterministically (the same samples on every machine, up to the last
bit of numpy's sin) and also written to config/sounds/<priority>.wav so operators can hear and
replace them:
    python -m qwen3tts.appliance.audio.chimes config/sounds
normal = a two-tone "ding-dong", priority = three rising tones, emergency = a repeated alert tone.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import soundfile
import soxr

from qwen3tts.appliance.audio.loudness import LoudnessTarget, normalised_sound
from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.appliance.priority import ANNOUNCEMENT_LEVELS, Priority
from qwen3tts.errors import AudioError, ConfigError

if TYPE_CHECKING:
    from qwen3tts.settings import AudioSettings

log = logging.getLogger(__name__)

PRIORITIES = tuple(level.label for level in ANNOUNCEMENT_LEVELS)
MAX_CHIME_S = 30.0
"""A chime is a short sound: a longer file is a mistake in the configuration, not a pre-announcement."""
DEFAULT_SOUNDS_DIR = Path(__file__).resolve().parents[4] / "config" / "sounds"
"""config/sounds of the source checkout; when absent (an installed wheel) the defaults are synthesised."""


def _bell(freq: float, seconds: float, decay_s: float) -> np.ndarray:
    """A struck-bell tone: fundamental plus two soft partials, exponential decay, clickless edges."""
    t = np.arange(int(seconds * MODEL_RATE)) / MODEL_RATE
    tone = np.sin(2 * np.pi * freq * t) + 0.35 * np.sin(2 * np.pi * 2 * freq * t)
    tone += 0.12 * np.sin(2 * np.pi * 3 * freq * t)
    return tone * np.exp(-t / decay_s) * _edges(len(t), attack_s=0.004, release_s=0.02)


def _beep(freq: float, seconds: float) -> np.ndarray:
    """A flat alert tone (fundamental + odd partial, so it cuts through noise) with clickless edges."""
    t = np.arange(int(seconds * MODEL_RATE)) / MODEL_RATE
    tone = np.sin(2 * np.pi * freq * t) + 0.3 * np.sin(2 * np.pi * 3 * freq * t)
    return tone * _edges(len(t), attack_s=0.005, release_s=0.01)


def _edges(n: int, attack_s: float, release_s: float) -> np.ndarray:
    """Raised-cosine attack and release so a tone starts and ends at exactly zero."""
    env = np.ones(n)
    a, r = int(attack_s * MODEL_RATE), int(release_s * MODEL_RATE)
    env[:a] = 0.5 - 0.5 * np.cos(np.pi * np.arange(a) / a)
    env[n - r :] = 0.5 + 0.5 * np.cos(np.pi * (np.arange(r) + 1) / r)
    return env


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * MODEL_RATE))


def _normalise(x: np.ndarray, peak: float) -> np.ndarray:
    return (x * (peak / np.max(np.abs(x)))).astype(np.float32)


def synthesize_chime(priority: str) -> np.ndarray:
    """The default chime of a priority as 24 kHz float32 samples; the same numbers on every call."""
    if priority == "normal":  # ding (E5) - dong (C5), overlapping like a door chime
        ding, dong = _bell(659.25, 1.1, 0.35), _bell(523.25, 1.3, 0.45)
        out = np.zeros(int(0.45 * MODEL_RATE) + len(dong))
        out[: len(ding)] += ding
        out[int(0.45 * MODEL_RATE) :] += dong
        return _normalise(out, 0.5)
    if priority == "priority":  # C5 E5 G5 rising
        notes = [np.concatenate([_bell(f, 0.28, 0.15), _silence(0.04)]) for f in (523.25, 659.25, 783.99)]
        return _normalise(np.concatenate([*notes, _bell(1046.5, 0.6, 0.25)]), 0.55)
    if priority == "emergency":  # three pairs of high-low alert beeps
        pair = np.concatenate([_beep(960.0, 0.16), _silence(0.03), _beep(720.0, 0.16), _silence(0.12)])
        return _normalise(np.tile(pair, 3), 0.7)
    raise ValueError(f"unknown priority {priority!r}")


def write_wav(path: Path, samples: np.ndarray, rate: int = MODEL_RATE) -> None:
    """16-bit mono PCM WAV at the model rate by default."""
    soundfile.write(str(path), np.clip(samples, -1.0, 1.0), rate, subtype="PCM_16")


def read_sound(path: Path) -> np.ndarray:
    """A sound file in any format libsndfile reads (WAV, FLAC, Ogg, MP3...), any channel count and rate,
    as 24 kHz float32 mono; AudioError names the file when it cannot be read or is not a short sound."""
    try:
        with soundfile.SoundFile(str(path)) as sound:
            if not 0 < sound.frames <= MAX_CHIME_S * sound.samplerate:
                raise AudioError(f"{path}: a chime must last up to {MAX_CHIME_S:g} s ({sound.frames} frames)")
            samples = sound.read(dtype="float32", always_2d=True)
    except (OSError, RuntimeError) as exc:  # soundfile's LibsndfileError is a RuntimeError
        raise AudioError(f"{path}: cannot read it as a sound ({exc})") from None
    mono = samples.mean(axis=1)
    if not np.isfinite(mono).all():
        raise AudioError(f"{path}: the sound has samples that are not numbers")
    if sound.samplerate != MODEL_RATE:
        mono = soxr.resample(mono, sound.samplerate, MODEL_RATE, quality="HQ")
    return np.ascontiguousarray(mono, dtype=np.float32)


def write_default_chimes(directory: Path) -> list[Path]:
    """(Re)write config/sounds/<priority>.wav from `synthesize_chime`."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for priority in PRIORITIES:
        path = directory / f"{priority}.wav"
        write_wav(path, synthesize_chime(priority))
        paths.append(path)
    return paths


@dataclass(frozen=True)
class ChimeSet:
    """The chime (24 kHz float32, or None for silence) of each priority, resolved once at start-up."""

    by_priority: Mapping[str, np.ndarray | None]

    @classmethod
    def from_settings(cls, settings: AudioSettings, sounds_dir: Path = DEFAULT_SOUNDS_DIR) -> ChimeSet:
        """Resolve chime_<priority>: 'default' (sounds_dir/<priority>.wav, else synthesised), 'none', a path.

        Raises ConfigError naming the key when a configured sound cannot be read.
        """
        chimes: dict[str, np.ndarray | None] = {}
        for priority in PRIORITIES:
            value = getattr(settings, f"chime_{priority}")
            chimes[priority] = _resolve(f"audio.chime_{priority}", value, priority, sounds_dir)
        return cls(chimes)

    @classmethod
    def defaults(cls) -> ChimeSet:
        return cls({p: synthesize_chime(p) for p in PRIORITIES})

    @classmethod
    def silent(cls) -> ChimeSet:
        return cls(dict.fromkeys(PRIORITIES))

    def levelled(self, target: LoudnessTarget | None) -> ChimeSet:
        """Every chime at the target loudness under its true-peak ceiling (unchanged when target is None)."""
        if target is None:
            return self
        return ChimeSet(
            {p: None if s is None else normalised_sound(s, target) for p, s in self.by_priority.items()}
        )

    def names(self) -> tuple[str, ...]:
        """Values an announcement's `chime` field may take."""
        return ("none", "default", *PRIORITIES)

    def for_announcement(self, level: Priority, chime: str | None = None) -> np.ndarray | None:
        """The chime to play: None/'default' -> the level's; 'none' -> no chime; a priority name -> its."""
        priority = level.label
        if chime == "none":
            return None
        if chime in (None, "default"):
            return self.by_priority.get(priority)
        if chime in self.by_priority:
            return self.by_priority[chime]
        log.warning("unknown chime %r; playing the %s chime", chime, priority)
        return self.by_priority.get(priority)


def _resolve(key: str, value: str, priority: str, sounds_dir: Path) -> np.ndarray | None:
    if value == "none":
        return None
    if value == "default":
        path = sounds_dir / f"{priority}.wav"
        if not path.exists():
            return synthesize_chime(priority)
    else:
        path = Path(value)
    try:
        return read_sound(path)
    except AudioError as exc:
        raise ConfigError(f"{key}: cannot read chime {path}: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """Write the default chimes into the directory given (default: config/sounds of this checkout)."""
    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else DEFAULT_SOUNDS_DIR
    for path in write_default_chimes(directory):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
