"""Secrets read from files or systemd credentials, never from the YAML."""

from __future__ import annotations

import os
from pathlib import Path

from qwen3tts.errors import ConfigError
from qwen3tts.settings.mqtt import MqttSettings
from qwen3tts.settings.servers import HttpServerSettings


def read_mqtt_password(mqtt: MqttSettings, environ: dict[str, str] | None = None) -> str | None:
    """The MQTT password from password_file, else from systemd's $CREDENTIALS_DIRECTORY/mqtt-password.

    Secrets never live in the YAML: it is often world-readable and ends up in bug reports.
    """
    return _read_secret(mqtt.password_file, "mqtt-password", "mqtt.password_file", environ)


def read_http_token(http: HttpServerSettings, environ: dict[str, str] | None = None) -> str | None:
    """The HTTP bearer token from token_file, else from $CREDENTIALS_DIRECTORY/http-token."""
    token = _read_secret(http.token_file, "http-token", "servers.http.token_file", environ)
    if token == "" and http.token_file is not None:
        raise ConfigError(f"servers.http.token_file: {http.token_file} is empty")
    return token or None  # an empty systemd credential (the installer's placeholder) means no token


def _read_secret(path: Path | None, credential: str, key: str, environ: dict[str, str] | None) -> str | None:
    """A secret from its file, else from systemd's credentials directory; None when neither exists."""
    environ = os.environ if environ is None else environ
    if path is None and environ.get("CREDENTIALS_DIRECTORY"):
        candidate = Path(environ["CREDENTIALS_DIRECTORY"]) / credential
        path = candidate if candidate.exists() else None
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from exc
