"""Where the sound goes on a box without zones, and how loud every announcement plays."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class LoudnessSettings:
    """Even loudness: every announcement and every chime brought to one integrated loudness (ITU-R BS.1770,
    measured with pyloudnorm) under a true-peak ceiling, while the speech streams (docs/benchmarks.md)."""

    enabled: bool = True
    """Level announcements and chimes; false plays them at the level the model and the files have.
    Default true."""
    target_lufs: float = field(default=-18.0, metadata={"min": -40.0, "max": -6.0})
    """Integrated loudness of every announcement and chime, in LUFS. Default -18 LUFS."""
    true_peak_dbtp: float = field(default=-1.0, metadata={"min": -20.0, "max": 0.0})
    """Ceiling of the true (4x oversampled) peak, in dBTP; a look-ahead limiter holds it. Default -1 dBTP."""
    max_gain_db: float = field(default=20.0, metadata={"min": 0.0, "max": 40.0})
    """Most a quiet sound is raised, in dB, so near-silence is not lifted into noise. Default 20 dB."""


@dataclass(frozen=True)
class AudioSettings:
    """Where the sound goes."""

    sink: Literal["auto", "alsa", "wav", "null"] = "auto"
    """auto uses ALSA when an output device exists, else WAV files. Default auto."""
    device: str = ""
    """ALSA/PortAudio device name (substring match); empty is the default device. Default empty."""
    wav_dir: Path | None = None
    """Directory for the wav sink, one file per announcement. Default null: <state>/wav."""
    wav_realtime: bool = False
    """Write WAV files at the speed a loudspeaker plays them (a demo, or a test that needs an announcement
    to be still playing when the next message arrives). Default false: as fast as synthesis goes."""
    volume: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Master volume, 0..1. Default 1.0."""
    muted: bool = False
    """Mute everything but emergency announcements. Default false."""
    lead_in_ms: int = field(default=300, metadata={"min": 0, "max": 5000})
    """Silence before each announcement so amplifiers wake, in ms. Default 300 ms."""
    tail_ms: int = field(default=300, metadata={"min": 0, "max": 5000})
    """Silence after each announcement so the end is not clipped, in ms. Default 300 ms."""
    fade_ms: int = field(default=10, metadata={"min": 0, "max": 500})
    """Fade at start, stop and barge-in, in ms. Default 10 ms."""
    block_ms: int = field(default=40, metadata={"min": 5, "max": 500})
    """Audio write granularity (barge-in reaction time), in ms. Default 40 ms."""
    stall_timeout_s: float = field(default=5.0, metadata={"min": 0.5, "max": 20.0})
    """A sound card that takes no samples for this long (a stuck driver, a half-unplugged USB speaker)
    fails the announcement playing with an `error` and is reopened; keep it under the unit's WatchdogSec.
    Default 5 s."""
    jitter_buffer_ms: int = field(default=300, metadata={"min": 0})
    """Least audio buffered before playback starts; raised from the measured real-time factor. Default 300."""
    chime_normal: str = "default"
    """Chime before normal announcements: default, none, or a sound file (WAV, FLAC, Ogg, MP3; up to
    30 s). Default default."""
    chime_priority: str = "default"
    """Chime before priority announcements: default, none, or a sound file (WAV, FLAC, Ogg, MP3; up to
    30 s). Default default."""
    chime_emergency: str = "default"
    """Chime before emergency announcements: default, none, or a sound file (WAV, FLAC, Ogg, MP3; up to
    30 s). Default default."""
    loudness: LoudnessSettings = field(default_factory=LoudnessSettings)
    """The loudness every announcement and chime is played at (a zone may set its own)."""
