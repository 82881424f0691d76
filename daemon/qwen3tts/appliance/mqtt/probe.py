"""One look at the broker with the daemon's credentials: `qwen3tts doctor`'s connect-and-disconnect, and
`qwen3tts fleet`'s read of the retained messages.

One-shot clients that share nothing with the daemon's connection (client.py; the pool's are pool_link.py
and pool_rescue.py): a throwaway client id, no will, nothing published.
"""

from __future__ import annotations

import os
import queue
import ssl
import threading
import time

import paho.mqtt.client as paho

from qwen3tts.appliance.mqtt.connection import tls_context
from qwen3tts.errors import BrokerError
from qwen3tts.settings import MqttSettings, read_mqtt_password


def _one_shot(settings: MqttSettings, name: str) -> paho.Client:
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"qwen3tts-{name}-{os.getpid()}")
    if settings.username:
        client.username_pw_set(settings.username, read_mqtt_password(settings))
    if settings.tls_ca is not None:
        client.tls_set_context(tls_context(settings))
    return client


def probe_broker(settings: MqttSettings, timeout: float = 5.0) -> str | None:
    """Connect once and disconnect (for `qwen3tts doctor`): None if the broker accepted us, else why not.

    A throwaway client id, no will, no availability message: a running daemon is neither kicked off
    (same client id) nor shown offline.
    """
    client = _one_shot(settings, "doctor")
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


def read_retained(
    settings: MqttSettings, filters: list[str], *, quiet_s: float = 0.5, timeout: float = 5.0
) -> list[tuple[str, bytes]]:
    """The retained messages under `filters`: (topic, payload), in arrival order. The broker sends them
    right after the subscription; the read ends once nothing came for `quiet_s` (or after `timeout`).

    BrokerError naming the reason when the broker cannot be reached or refuses us.
    """
    client = _one_shot(settings, "fleet")
    got: list[tuple[str, bytes]] = []
    lock, subscribed = threading.Lock(), threading.Event()
    last = [time.monotonic()]
    refused: queue.Queue = queue.Queue()

    def on_connect(c, _u, _f, code, _p) -> None:
        if code.is_failure:
            refused.put(code)
        else:
            c.subscribe([(f, 0) for f in filters])

    def on_subscribe(*_args) -> None:
        last[0] = time.monotonic()
        subscribed.set()

    def on_message(_c, _u, msg) -> None:
        if msg.retain:  # a live message is news, not the stored state
            with lock:
                got.append((msg.topic, bytes(msg.payload)))
                last[0] = time.monotonic()

    client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
    try:
        client.connect(settings.host, settings.port, keepalive=max(5, int(timeout)))
    except (OSError, ssl.SSLError) as exc:
        raise BrokerError(f"cannot reach the broker at {settings.host}:{settings.port}: {exc}") from exc
    client.loop_start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and refused.empty():
            if subscribed.is_set() and time.monotonic() - last[0] >= quiet_s:
                break
            time.sleep(0.05)
    finally:
        client.disconnect()
        client.loop_stop()
    if not refused.empty():
        raise BrokerError(f"the broker refused us: {refused.get()}")
    if not subscribed.is_set():
        raise BrokerError(f"no answer from the broker within {timeout:g} s")
    with lock:
        return list(got)
