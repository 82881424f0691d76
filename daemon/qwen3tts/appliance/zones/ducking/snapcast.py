"""Ducking on Snapcast: the volume of the zone's Snapcast clients lowered over JSON-RPC (Client.SetVolume).

For a room where Snapcast plays the music and the announcement comes out elsewhere (a sound card, another
stream): the group keeps its stream, its clients' volume goes down by `level_db` and back up afterwards.
Snapcast's volume is a percentage; a step of `db` sets `percent * 10^(db/20)` of what the client had,
rounded (a linear volume control: snapclient's own mixer curve may lower it further). Muting is left
alone. The percentages before us are recorded (zones/restore.py) before the first change, so a crash of
ours leaves them on disk and the next start sets them back.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Any

from qwen3tts.appliance.zones.ducking.zone_ducking import DuckError
from qwen3tts.appliance.zones.restore import RestoreRecord
from qwen3tts.appliance.zones.snapcast_rpc import SnapcastControl, SnapcastError, SnapcastRefused
from qwen3tts.settings import SnapcastDuckSettings


def client_volumes(status: dict[str, Any], wanted: tuple[str, ...]) -> dict[str, int]:
    """{client id: volume percent} of the clients named in `wanted` (ids or names; * = every client)."""
    out = {}
    for group in status.get("groups", ()):
        for client in group.get("clients", ()) if isinstance(group, dict) else ():
            config = client.get("config", {}) if isinstance(client, dict) else {}
            names = {client.get("id"), config.get("name")} if isinstance(config, dict) else set()
            volume = config.get("volume", {}) if isinstance(config, dict) else {}
            percent = volume.get("percent") if isinstance(volume, dict) else None
            if ("*" in wanted or names.intersection(wanted)) and isinstance(percent, int):
                out[str(client.get("id"))] = percent
    return out


class SnapcastDuck:
    """The `DuckBackend` lowering Snapcast clients."""

    def __init__(self, zone: str, settings: SnapcastDuckSettings, restore_dir: Path) -> None:
        self.zone, self.settings = zone, settings
        self.control = SnapcastControl(settings.host, settings.control_port, settings.connect_timeout_s)
        self.name = f"snapcast-volume:{self.control.address}"
        self.record = RestoreRecord(restore_dir, f"{zone}.duck-snapcast")
        self._before: dict[str, int] = {}

    def lower(self, announcement: str, level_db: float, ramp_ms: int) -> None:
        try:
            volumes = client_volumes(self.control.status(), self.settings.clients)
        except SnapcastError as exc:
            raise DuckError(str(exc)) from exc
        if not volumes:
            raise DuckError(f"snapserver has no client {', '.join(self.settings.clients)}")
        self.record.remember({client: str(percent) for client, percent in volumes.items()})
        self._before = {client: int(percent) for client, percent in self.record.pending().items()
                        if client in volumes}  # fmt: skip  # a crash's record wins: the volume before us

    def step(self, db: float) -> None:
        factor = 10 ** (db / 20)
        for client, percent in self._before.items():
            self._set(client, round(percent * factor))

    def raise_back(self, announcement: str, ramp_ms: int) -> None:
        """Nothing to say: the steps raise it."""

    def hand_over(self, previous: str, announcement: str, level_db: float) -> None:
        """It stays where it is."""

    def restored(self) -> None:
        before, self._before = self._before, {}
        self._restore({client: str(percent) for client, percent in before.items()})

    def recover(self) -> bool:
        pending = self.record.pending()
        if pending:
            self._restore(pending)
        return True

    def _restore(self, volumes: dict[str, str]) -> None:
        back = []
        try:
            for client, percent in volumes.items():
                with suppress(SnapcastRefused, ValueError):  # the client is gone, or the record is not ours
                    self._call(client, int(percent))
                back.append(client)
        except SnapcastError as exc:
            raise DuckError(str(exc)) from exc
        finally:
            self.record.forget(back)

    def _set(self, client: str, percent: int) -> None:
        try:
            self._call(client, percent)
        except SnapcastError as exc:
            raise DuckError(str(exc)) from exc

    def _call(self, client: str, percent: int) -> None:
        volume = {"percent": max(0, min(100, percent))}
        self.control.call("Client.SetVolume", {"id": client, "volume": volume})
