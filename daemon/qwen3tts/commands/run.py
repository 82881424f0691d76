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
    return service.exit_code


# Longer than the announcer's drain (45 s) plus the bounded joins, shorter than TimeoutStopSec=60.
STOP_DEADLINE_S = 55.0


def _stop_in_background(service) -> None:
    """Signal handlers must return quickly; the main thread waits for the stop to complete.

    SIGTERM always stops the process: should a wedged worker hold up the orderly stop past
    STOP_DEADLINE_S, the process exits anyway (non-zero, so the journal shows it was not clean).
    """
    import threading

    threading.Thread(target=service.stop, name="shutdown", daemon=True).start()
    deadline = threading.Timer(STOP_DEADLINE_S, _exit_now, args=(service,))
    deadline.daemon = True
    deadline.start()


def _exit_now(service) -> None:
    import os

    log.error("the orderly stop took longer than %.0f s; exiting now", STOP_DEADLINE_S)
    logging.shutdown()
    os._exit(service.exit_code or 1)
