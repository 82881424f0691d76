"""The sound cards PortAudio sees: loading sounddevice, listing the output devices, choosing one by name.

The only module that imports sounddevice, and only lazily: a machine without libportaudio2 still runs
with the WAV or null sink. The ALSA sink (alsa.py) asks here for its backend and its device.
"""

from __future__ import annotations

from typing import Any

from qwen3tts.errors import AudioError


def load_backend() -> Any:
    """The sounddevice module; AudioError (not OSError) when PortAudio itself is missing."""
    try:
        import sounddevice
    except OSError as exc:  # sounddevice raises OSError('PortAudio library not found')
        raise AudioError(f"PortAudio is not available ({exc}); install libportaudio2") from exc
    return sounddevice


def list_output_devices(backend: Any = None) -> list[dict[str, Any]]:
    """Every output device PortAudio sees: name, index, host API, channels, default rate."""
    sd = backend or load_backend()
    hostapis = sd.query_hostapis()
    return [
        {
            "index": dev["index"],
            "name": dev["name"],
            "hostapi": hostapis[dev["hostapi"]]["name"],
            "channels": dev["max_output_channels"],
            "default_samplerate": dev["default_samplerate"],
        }
        for dev in sd.query_devices()
        if dev["max_output_channels"] > 0
    ]


def resolve_output_device(sd: Any, name: str) -> dict[str, Any]:
    """The output device whose '<name>, <host API>' contains the words of `name` in order ('' = default).

    Stored settings name a device, never an index: indices change when devices come and go.
    """
    try:
        if name:
            return dict(sd.query_devices(name, kind="output"))
        return dict(sd.query_devices(kind="output"))
    except (ValueError, sd.PortAudioError) as exc:
        which = f"matching {name!r}" if name else "(no default output)"
        raise AudioError(f"no usable output device {which}: {exc}") from exc
