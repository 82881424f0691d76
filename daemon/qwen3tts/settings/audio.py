"""Where the sound goes: the default sink, Snapcast and the zones."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


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


ZONE_NAME_PATTERN = r"[A-Za-z0-9._-]{1,64}"


@dataclass(frozen=True)
class SnapcastSettings:
    """A zone's Snapcast output: the snapserver stream it feeds and the groups it switches to that stream."""

    host: str = "127.0.0.1"
    """snapserver's host name or address, for its JSON-RPC control (Group.SetStream). Default 127.0.0.1."""
    control_port: int = field(default=1705, metadata={"min": 1, "max": 65535})
    """snapserver's JSON-RPC TCP port (its tcp.port). Default 1705."""
    source: str = "tcp://127.0.0.1:4953"
    """Where the PCM goes: tcp://host:port, the stream's `tcp://` source in server mode (snapserver listens;
    works across machines), or pipe:///path, the stream's `pipe://` source on this host. Default
    tcp://127.0.0.1:4953 (docs/operations.md has the measurements behind it)."""
    stream: str = "announcements"
    """Id (the `name=`) of the snapserver stream that source feeds. Default announcements."""
    clients: tuple[str, ...] = ("*",)
    """Snapcast clients of this zone, by id or name: each group holding one of them is switched to the
    stream while an announcement plays and back afterwards; * is every group. Default *."""
    buffer_ms: int = field(default=1000, metadata={"min": 0, "max": 10000})
    """snapserver's stream.buffer: how long after the last write the clients play the last sample (the
    group is switched back then). Default 1000 ms."""
    connect_timeout_s: float = field(default=2.0, metadata={"min": 0.1, "max": 60.0})
    """Timeout of one JSON-RPC call or connection to snapserver, in seconds. Default 2 s."""


@dataclass(frozen=True)
class ZoneSettings:
    """One zone of this box: a name announcements address and the output it plays on."""

    name: str = field(default="", metadata={"topic": "level"})
    """The zone's name (letters, digits, . _ -; also its topic <prefix>/zone/<name>/say). Required."""
    output: Literal["alsa", "wav", "null", "snapcast"] = "alsa"
    """alsa (a sound card), wav (files), null (discard) or snapcast (a snapserver stream). Default alsa."""
    device: str = ""
    """alsa: the ALSA/PortAudio device name (substring match); empty is the default device. Default empty."""
    wav_dir: Path | None = None
    """wav: the directory, one file per announcement. Default null: <state>/wav/<name>."""
    wav_realtime: bool = False
    """wav: write at the speed a loudspeaker plays. Default false."""
    snapcast: SnapcastSettings = field(default_factory=SnapcastSettings)
    """snapcast: the snapserver and stream."""
