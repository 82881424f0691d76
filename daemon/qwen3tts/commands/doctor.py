"""`qwen3tts doctor`: check every link an appliance needs, each with ✔/✘ and the fix; exit 1 when
something needed is broken. `--json` for scripts, `--thermal` for the detailed sensor listing.

Run it as the service would: with the same --config, and under systemd's paths
(STATE_DIRECTORY=/var/lib/qwen3tts CACHE_DIRECTORY=/var/cache/qwen3tts) — see docs/operations.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.add_argument("--thermal", action="store_true", help="only list the thermal sensors in detail")
    parser.add_argument(
        "--sysfs-root",
        type=Path,
        metavar="DIR",
        help="root of sysfs to read (default: thermal.sysfs_root, normally /sys)",
    )
    parser.add_argument("--dev-root", type=Path, default=Path("/dev"), metavar="DIR", help="default /dev")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the broker")
    parser.add_argument(
        "--broker-config",
        type=Path,
        metavar="FILE",
        help="mosquitto.conf to check for queue limits that drop messages "
        "(default: /etc/mosquitto/mosquitto.conf when the broker is on this machine)",
    )


def doctor(args: argparse.Namespace, settings: Settings) -> int:
    thermal = settings.thermal
    if args.sysfs_root is not None:
        thermal = dataclasses.replace(thermal, sysfs_root=args.sysfs_root)
    if args.thermal:
        from qwen3tts.doctor.thermal import print_thermal_report

        print_thermal_report(thermal)
        return 0
    from qwen3tts.doctor.check import exit_code, render_json, render_text

    checks = run_checks(settings, thermal, args.dev_root, args.timeout, broker_config=args.broker_config)
    sys.stdout.write(render_json(checks) if args.json else render_text(checks))
    return exit_code(checks)


def run_checks(
    settings: Settings, thermal, dev_root: Path, timeout: float, core=None, broker_config: Path | None = None
) -> list:
    """Every check, in the order a sound goes: model and devices, storage, broker, speaker, heat."""
    from qwen3tts.doctor import daemon, platform, servers, snapcast
    from qwen3tts.doctor.broker_queue import broker_queue_checks
    from qwen3tts.doctor.check import Check

    checks = []
    try:
        import openvino as ov

        core = core or ov.Core()
        checks.append(platform.openvino_check(core))
        checks += platform.device_checks(core, settings.devices, dev_root, thermal.sysfs_root)
    except Exception as exc:  # a broken OpenVINO install is exactly what the doctor is for
        fix = "reinstall the package's venv (scripts/setup.sh or scripts/install-unit.sh)"
        checks.append(Check("OpenVINO", False, f"{type(exc).__name__}: {exc}", fix))
    checks += daemon.bundle_check(settings.model.bundle)
    checks += daemon.codec_variant_check(settings.model.bundle, settings.devices, core)
    if core is not None:  # else OpenVINO is broken, and its own check says so
        max_seqs = settings.engine.max_num_seqs
        checks += daemon.decode_path_check(
            settings.model.bundle, settings.devices, core.available_devices, max_seqs
        )
    checks += daemon.spool_checks(settings.announcements.spool_dir)
    checks.append(platform.disk_check("disk (state)", settings.announcements.spool_dir, needed=True))
    checks.append(platform.disk_check("disk (cache)", settings.model.cache_dir, needed=False))
    checks += daemon.broker_checks(settings.mqtt, timeout)
    checks += broker_queue_checks(settings.mqtt, broker_config, timeout)
    checks.append(daemon.audio_check(settings.audio))
    checks += snapcast.snapcast_checks(settings, timeout)
    checks += servers.server_checks(settings)
    checks.append(platform.thermal_check(thermal))
    return checks
