"""The zones of a box: each one's output (ALSA, WAV, Snapcast), loudness and ducking."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from qwen3tts.settings.audio import LoudnessSettings

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
class SnapcastDuckSettings:
    """Ducking on Snapcast: the volume of the zone's Snapcast clients lowered over JSON-RPC."""

    host: str = "127.0.0.1"
    """snapserver's host name or address, for its JSON-RPC control (Client.SetVolume). Default 127.0.0.1."""
    control_port: int = field(default=1705, metadata={"min": 1, "max": 65535})
    """snapserver's JSON-RPC TCP port (its tcp.port). Default 1705."""
    clients: tuple[str, ...] = ()
    """Snapcast clients lowered, by id or name; * is every client; empty lowers none. Default empty."""
    connect_timeout_s: float = field(default=2.0, metadata={"min": 0.1, "max": 60.0})
    """Timeout of one JSON-RPC call to snapserver, in seconds. Default 2 s."""


@dataclass(frozen=True)
class AlsaMixerDuckSettings:
    """Ducking on an ALSA mixer control (through `amixer`), where the card has one."""

    card: str = ""
    """The card (`amixer -c`): its index or name, e.g. 0 or PCH. Default empty: the default card."""
    control: str = ""
    """The simple mixer control lowered, e.g. Master or PCM; empty lowers none. Default empty."""


@dataclass(frozen=True)
class DuckingSettings:
    """What a zone lowers while an announcement plays in it (docs/operations.md, "Ducking")."""

    level_db: float = field(default=-20.0, metadata={"min": -90.0, "max": 0.0})
    """How far other audio is lowered while an announcement plays, in dB (0 or less). Default -20 dB."""
    ramp_in_ms: int = field(default=300, metadata={"min": 0, "max": 10000})
    """How long the lowering takes, in ms; the chime starts after it. Default 300 ms."""
    ramp_out_ms: int = field(default=800, metadata={"min": 0, "max": 10000})
    """How long raising it back takes after the last sample, in ms. Default 800 ms."""
    mqtt_topic: str = field(default="", metadata={"topic": "prefix"})
    """Topic of the zone's `duck` / `unduck` messages (docs/mqtt.md); empty sends none. Default empty."""
    snapcast: SnapcastDuckSettings = field(default_factory=SnapcastDuckSettings)
    """Snapcast clients whose volume is lowered; none by default."""
    alsa_mixer: AlsaMixerDuckSettings = field(default_factory=AlsaMixerDuckSettings)
    """An ALSA mixer control lowered; none by default."""

    @property
    def enabled(self) -> bool:
        """True when anything is lowered at all."""
        return bool(self.mqtt_topic or self.snapcast.clients or self.alsa_mixer.control)


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
    ducking: DuckingSettings = field(default_factory=DuckingSettings)
    """What this zone lowers while an announcement plays in it; nothing by default."""
    loudness: LoudnessSettings | None = None
    """This zone's loudness (all of its keys, as in audio.loudness). Default null: audio.loudness."""
