"""`qwen3tts fleet`: every box on the broker in one table, from the retained status and availability.

Reads with the `mqtt` settings of this box (host, port, credentials, TLS, `prefix`): a one-shot client
that subscribes, takes what the broker has retained, and disconnects (appliance/mqtt/probe.py). Nothing
is published, so it may run beside the daemon, on the box or anywhere that reaches the broker.
"""

from __future__ import annotations

import argparse
import json

from qwen3tts.appliance.mqtt.fleet import boxes, fleet_filters, table
from qwen3tts.appliance.mqtt.probe import read_retained
from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per box, as a JSON list")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="S",
                        help="give up on the broker after S seconds (default 5)")  # fmt: skip


def fleet(args: argparse.Namespace, settings: Settings) -> int:
    prefix = settings.mqtt.prefix
    retained = read_retained(settings.mqtt, fleet_filters(prefix), timeout=args.timeout)  # or BrokerError
    rows = [box.row() for box in boxes(prefix, retained)]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif rows:
        print(table(rows))
    else:
        print(f"no box has a retained status under {prefix}/ on {settings.mqtt.host}:{settings.mqtt.port}")
    return 0
