"""`qwen3tts run`: the appliance daemon (systemd runs exactly this)."""

from __future__ import annotations

import argparse
import logging
import signal
import socket

from qwen3tts.settings import Settings

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="first-run default: start a loopback mosquitto if none runs, build the tiny bundle if missing",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    from qwen3tts.appliance.service import Service
    from qwen3tts.settings_loader import check_writable_dirs

    check_writable_dirs(settings)  # one line naming the key now, not a traceback after the compile
    broker = None
    if args.embedded:
        from qwen3tts.appliance.embedded import ensure_broker, ensure_tiny_bundle

        var_dir = settings.model.bundle.parent
        ensure_tiny_bundle(settings, var_dir)
        broker = ensure_broker(settings, var_dir / "mosquitto")
    service = Service(settings, config_path=args.config)
    signal.signal(signal.SIGTERM, lambda *_: _stop_in_background(service))
    signal.signal(signal.SIGINT, lambda *_: _stop_in_background(service))
    signal.signal(signal.SIGHUP, lambda *_: service.reload())
    try:
        service.start()
        site = settings.mqtt.site or socket.gethostname()
        print(
            f"qwen3tts is listening. Try:\n  mosquitto_pub -h {settings.mqtt.host} -p {settings.mqtt.port} "
            f"-t {settings.mqtt.prefix}/{site}/say -m 'Hello from qwen3tts.'",
            flush=True,
        )
        while not service.wait(1.0):
            pass
    finally:
        if broker is not None:
            broker.stop()
    return 0


def _stop_in_background(service) -> None:
    """Signal handlers must return quickly; the main thread waits for the stop to complete."""
    import threading

    threading.Thread(target=service.stop, name="shutdown").start()
