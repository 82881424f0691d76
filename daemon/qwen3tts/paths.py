"""Where qwen3tts keeps its files when the configuration does not say: never the current directory.

Under systemd the unit's `StateDirectory=` and `CacheDirectory=` arrive as $STATE_DIRECTORY and
$CACHE_DIRECTORY (a colon-separated list when a unit declares several; the first is ours). Elsewhere
the XDG base directories: $XDG_STATE_HOME/qwen3tts (~/.local/state/qwen3tts) for the spool, WAV
files and the embedded tiny bundle, $XDG_CACHE_HOME/qwen3tts (~/.cache/qwen3tts) for the OpenVINO
compile cache and the phrase cache. A path set in the configuration always wins. Temporary files
(multiprocessing's sockets for the text front end's workers) go to the runtime directory: systemd's
$RUNTIME_DIRECTORY, else $XDG_RUNTIME_DIR/qwen3tts, else <state>/run; never the shared /tmp.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from qwen3tts.settings import Settings

APP = "qwen3tts"
SYSTEM_CONFIG = Path("/etc/qwen3tts/qwen3tts.yaml")
"""The installed appliance's configuration (the Debian package's conffile, scripts/install-unit.sh's copy)."""
TINY_BUNDLE = "bundle-tiny"
"""Name of the embedded random bundle inside the state directory (`run --embedded` builds it there)."""


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Spool, WAV files, the embedded bundle: $STATE_DIRECTORY, else $XDG_STATE_HOME/qwen3tts."""
    return _base_dir(environ, "STATE_DIRECTORY", "XDG_STATE_HOME", (".local", "state"))


def snapcast_restore_dir(environ: Mapping[str, str] | None = None) -> Path:
    """What Snapcast zones must switch back after a crash (zones/restore.py): <state>/snapcast."""
    return state_dir(environ) / "snapcast"


def ducking_restore_dir(environ: Mapping[str, str] | None = None) -> Path:
    """What zones must raise again after a crash left them ducked (zones/ducking/): <state>/ducking."""
    return state_dir(environ) / "ducking"


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """What lives only while the daemon runs: $RUNTIME_DIRECTORY, else $XDG_RUNTIME_DIR/qwen3tts, else
    <state>/run (a relative $XDG_RUNTIME_DIR is ignored, as the XDG spec says)."""
    environ = os.environ if environ is None else environ
    systemd = environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    if systemd:
        return Path(systemd)
    xdg = environ.get("XDG_RUNTIME_DIR", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / APP
    return state_dir(environ) / "run"


# multiprocessing's forkserver binds a Unix socket at <tempdir>/pymp-XXXXXXXX/listener-XXXXXXXX: the
# whole path must fit sun_path (108 bytes with its NUL), or the text front end cannot start at all.
FORKSERVER_SOCKET_SUFFIX = len("/pymp-xxxxxxxx/listener-xxxxxxxx")
MAX_UNIX_SOCKET_PATH = 107


def keep_temporary_files_in_runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Make this process's temporary files (tempfile's default directory, which multiprocessing uses for
    its forkserver socket) go to the runtime directory, created private (0700); returns it.

    OSError (ENAMETOOLONG) when the directory is too deep for the forkserver's socket path: the caller
    keeps tempfile's default then (a deep <state>/run only; systemd's /run/qwen3tts always fits)."""
    directory = runtime_dir(environ)
    if len(os.fsencode(directory)) + FORKSERVER_SOCKET_SUFFIX > MAX_UNIX_SOCKET_PATH:
        raise OSError(errno.ENAMETOOLONG, "too long a path for the forkserver's Unix socket", str(directory))
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    tempfile.tempdir = str(directory)
    return directory


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """What can be thrown away (the compile cache): $CACHE_DIRECTORY, else $XDG_CACHE_HOME/qwen3tts."""
    return _base_dir(environ, "CACHE_DIRECTORY", "XDG_CACHE_HOME", (".cache",))


def default_bundle(environ: Mapping[str, str] | None = None) -> Path:
    """The embedded tiny bundle's one location; no other path ever gets random weights built into it."""
    return state_dir(environ) / TINY_BUNDLE


def default_config(
    environ: Mapping[str, str] | None = None, system_config: Path = SYSTEM_CONFIG
) -> Path | None:
    """The configuration a command without --config reads: $QWEN3TTS_CONFIG, else the installed file.

    So `sudo qwen3tts doctor` on an appliance checks the configuration the service runs with, not the
    defaults; None (defaults only) on a development checkout. The directories stay the caller's own:
    what root wrote into the service's state or cache directory would stay root's, and the service's
    dynamic user could not write there (systemd fixes only the top directory's owner).
    """
    environ = os.environ if environ is None else environ
    if environ.get("QWEN3TTS_CONFIG"):
        return Path(environ["QWEN3TTS_CONFIG"])
    return system_config if system_config.is_file() else None


def with_default_paths(settings: Settings, environ: Mapping[str, str] | None = None) -> Settings:
    """`settings` with every path the configuration left empty (null) set to its default location."""
    model, announcements, audio = settings.model, settings.announcements, settings.audio
    state = state_dir(environ)
    model = dataclasses.replace(
        model,
        bundle=model.bundle or state / TINY_BUNDLE,
        cache_dir=model.cache_dir or cache_dir(environ) / "openvino",
    )
    announcements = dataclasses.replace(announcements, spool_dir=announcements.spool_dir or state / "spool")
    audio = dataclasses.replace(audio, wav_dir=audio.wav_dir or state / "wav")
    cache = dataclasses.replace(
        settings.cache, phrase_dir=settings.cache.phrase_dir or cache_dir(environ) / "phrases"
    )
    zones = tuple(
        dataclasses.replace(zone, wav_dir=zone.wav_dir or state / "wav" / zone.name)
        for zone in settings.zones
    )
    return dataclasses.replace(
        settings, model=model, announcements=announcements, audio=audio, cache=cache, zones=zones
    )


def _base_dir(
    environ: Mapping[str, str] | None, systemd_key: str, xdg_key: str, home_default: tuple[str, ...]
) -> Path:
    environ = os.environ if environ is None else environ
    systemd = environ.get(systemd_key, "").split(":")[0]
    if systemd:
        return Path(systemd)
    xdg = environ.get(xdg_key, "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore relative values
        return Path(xdg) / APP
    return Path(environ.get("HOME") or Path.home()).joinpath(*home_default, APP)
