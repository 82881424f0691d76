"""`qwen3tts doctor`'s one look at the broker: connect once and disconnect, with the daemon's credentials.

The second (and last) module that imports paho, beside client.py: a one-shot client that shares nothing
with the daemon's connection.
"""

from __future__ import annotations

import os
import queue
import ssl

import paho.mqtt.client as paho

from qwen3tts.appliance.mqtt.connection import tls_context
from qwen3tts.settings import MqttSettings, read_mqtt_password


def probe_broker(settings: MqttSettings, timeout: float = 5.0) -> str | None:
    """Connect once and disconnect (for `qwen3tts doctor`): None if the broker accepted us, else why not.

    A throwaway client id, no will, no availability message: a running daemon is neither kicked off
    (same client id) nor shown offline.
    """
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"qwen3tts-doctor-{os.getpid()}")
    if settings.username:
        client.username_pw_set(settings.username, read_mqtt_password(settings))
    if settings.tls_ca is not None:
        client.tls_set_context(tls_context(settings))
    answers: queue.Queue = queue.Queue()
    client.on_connect = lambda _c, _u, _f, code, _p: answers.put(code)
    try:
        client.connect(settings.host, settings.port, keepalive=max(5, int(timeout)))
    except (OSError, ssl.SSLError) as exc:  # refused, unreachable, certificate rejected
        return f"{type(exc).__name__}: {exc}"
    client.loop_start()
    try:
        code = answers.get(timeout=timeout)
    except queue.Empty:
        return f"no answer to CONNECT within {timeout:g} s"
    finally:
        client.disconnect()
        client.loop_stop()
    return f"refused: {code}" if code.is_failure else None
