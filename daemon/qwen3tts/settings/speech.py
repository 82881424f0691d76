"""What a request that says little gets: voice, text front end, announcements and the phrase cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Priority = Literal["normal", "priority", "emergency"]


@dataclass(frozen=True)
class VoiceSettings:
    """What an announcement sounds like when it does not say."""

    voice: str = ""
    """Default speaker (CustomVoice preset name); empty picks the bundle's first speaker. Default empty."""
    language: str = "auto"
    """Default language name (english, chinese, ...) or auto. Default auto."""
    instruct: str = ""
    """Default style instruction (VoiceDesign / 1.7B CustomVoice). Default empty."""
    ref_audio: Path | None = None
    """Reference WAV whose voice a Base bundle speaks with. Default none."""


@dataclass(frozen=True)
class TextSettings:
    """How announcement text becomes what the model says (see docs/text.md)."""

    normalize: bool = True
    """Say numbers, times, prices, units and codes as words; a message may opt out. Default true."""
    lexicon: Path | None = None
    """Site lexicon YAML (words or patterns -> how they are said), reloaded on SIGHUP. Default none."""
    front_end_timeout_s: float = field(default=2.0, metadata={"min": 0.0, "max": 600.0})
    """Seconds the text front end may take over one text; past it its worker process is killed and
    replaced, and the text fails with that reason. 0: run it in-process, unguarded. Default 2 s."""
    front_end_workers: int = field(default=2, metadata={"min": 1, "max": 8})
    """Worker processes of the guarded text front end (texts read at once). Default 2."""


@dataclass(frozen=True)
class AnnouncementSettings:
    """Validation limits and the durable queue."""

    spool_dir: Path | None = None
    """Directory of the durable spool. Default null: <state>/spool ($STATE_DIRECTORY under systemd)."""
    max_payload_bytes: int = field(default=65536, metadata={"min": 64})
    """Largest accepted say payload in bytes. Default 64 KiB."""
    max_queue: int = field(default=100, metadata={"min": 1})
    """Most announcements waiting; more are rejected. Default 100."""
    default_ttl: float = field(default=0.0, metadata={"min": 0.0})
    """Seconds an announcement stays valid when it gives no ttl; 0 means forever. Default 0."""
    max_repeat: int = field(default=10, metadata={"min": 1})
    """Largest accepted repeat count. Default 10."""
    dedup_window: int = field(default=1000, metadata={"min": 1})
    """How many recent announcement ids are remembered to drop duplicates. Default 1000."""
    interrupted: Literal["cancel", "resume"] = "resume"
    """What happens to an announcement a higher priority one barged in on. Default resume."""
    on_shutdown: Literal["finish", "cancel"] = "finish"
    """On SIGTERM, finish the announcement playing or cancel it (it stays spooled). Default finish."""
    lookahead_s: float = field(default=20.0, metadata={"min": 0.0})
    """Seconds of audio synthesised ahead of playback (this and the next announcements). Default 20 s."""
    max_attempts: int = field(default=2, metadata={"min": 1})
    """A spooled announcement the daemon died on this many times is quarantined, not replayed. Default 2."""


@dataclass(frozen=True)
class CacheSettings:
    """The phrase cache: finished announcements' audio, replayed without synthesis."""

    enabled: bool = True
    """Store finished announcements on disk and replay identical ones; false writes nothing (a repeat
    still replays its first rendition from memory). Default true."""
    phrase_dir: Path | None = None
    """Directory of cached phrases. Default null: <cache>/phrases ($CACHE_DIRECTORY under systemd)."""
    max_bytes: int = field(default=256 * 2**20, metadata={"min": 0})
    """Size bound of the phrase directory in bytes; least recently used out. Default 268435456 (256 MiB)."""
