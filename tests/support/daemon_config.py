"""A whole daemon on the tiny bundle for servers tests: a real broker, a WAV sink, free ports."""

from __future__ import annotations

import json
from pathlib import Path

from announcer_rig import start_subscribed

from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings


def start_daemon(
    tmp_path: Path, bundle: Path, mosquitto, site: str, servers: dict, sections: dict | None = None
) -> Service:
    """A started Service speaking into tmp_path/wav with the `servers` section given and any other
    `sections` (whole top-level sections, replacing these defaults), returned once the broker routes its
    topics to it (announcer_rig.start_subscribed); stop it yourself."""
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(json.dumps({
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": site, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav"), "lead_in_ms": 0, "tail_ms": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
        "engine": {"max_frames": 30, "temperature": 0},
        "servers": servers,
    } | (sections or {})))  # fmt: skip
    service = Service(load_settings(config), config_path=config)
    start_subscribed(service)
    return service
