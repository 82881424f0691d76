"""What `qwen3tts doctor` says about the zones with a Snapcast output: is their snapserver there?

The daemon never fails its start on an unreachable snapserver (the zone's sink stays `lost` and retries
with backoff), so this is where an operator sees it: one check per Snapcast zone, asking snapserver's
JSON-RPC for its status once, as the sink does when it opens. Failed: the address and the reason.
"""

from __future__ import annotations

from qwen3tts.appliance.zones.snapcast_rpc import SnapcastControl, SnapcastError, stream_format
from qwen3tts.doctor.check import Check
from qwen3tts.settings import Settings

FIX = "start snapserver (systemctl start snapserver) or correct zones[{index}].snapcast (docs/operations.md)"


def snapcast_checks(settings: Settings, timeout: float) -> list[Check]:
    """One check per zone whose output is snapcast: snapserver reachable, the stream there and usable."""
    checks = []
    for index, zone in enumerate(settings.zones):
        if zone.output != "snapcast":
            continue
        snap = zone.snapcast
        control = SnapcastControl(snap.host, snap.control_port, min(timeout, snap.connect_timeout_s))
        name = f"snapcast {zone.name}"
        try:
            fmt = stream_format(control.status(), snap.stream)
        except SnapcastError as exc:
            where = "" if control.address in str(exc) else f"snapserver {control.address}: "
            checks.append(Check(name, False, f"{where}{exc}", FIX.format(index=index)))
            continue
        detail = f"snapserver {control.address}, stream {snap.stream!r} {fmt.rate}:{fmt.bits}:{fmt.channels}"
        checks.append(Check(name, True, detail))
    return checks
