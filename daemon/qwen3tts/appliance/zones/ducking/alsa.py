"""Ducking on an ALSA mixer control: a simple control (Master, PCM, ...) lowered by N dB and back.

Driven through `amixer` (alsa-utils, a Debian package the appliance has anyway) rather than a Python
binding: pyalsaaudio is not in the venv and would need libasound2-dev to build, and two calls per ramp
step of a few milliseconds each are cheap. The control's raw value before us is recorded
(zones/restore.py) before the first change and set back exactly at the end (the dB steps between are
rounded by the card), so a crash of ours leaves it on disk and the next start sets it back.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Protocol

from qwen3tts.appliance.zones.ducking.zone_ducking import DuckError
from qwen3tts.appliance.zones.restore import RestoreRecord
from qwen3tts.settings import AlsaMixerDuckSettings

PLAYBACK = re.compile(r"Playback (-?\d+) \[\d+%\](?: \[(-?\d+(?:\.\d+)?)dB\])?")
"""`amixer sget` lines such as `  Front Left: Playback 60 [69%] [-17.25dB] [on]` (raw value, dB)."""


class Mixer(Protocol):
    """One simple mixer control; raises DuckError when the card or control is not there."""

    name: str

    def read(self) -> tuple[int, float]:
        """(raw value, dB) of the control's first playback channel."""

    def set_db(self, db: float) -> None:
        """Every playback channel to `db` (the card rounds to its own steps)."""

    def set_raw(self, raw: int) -> None:
        """Every playback channel to the raw value `raw`."""


def parse_playback(text: str, control: str) -> tuple[int, float]:
    """(raw, dB) of the first playback channel in `amixer sget` output; DuckError without a dB scale."""
    match = PLAYBACK.search(text)
    if match is None:
        raise DuckError(f"mixer control {control!r} has no playback volume")
    if match.group(2) is None:
        raise DuckError(f"mixer control {control!r} has no dB scale to lower it by")
    return int(match.group(1)), float(match.group(2))


class Amixer:
    """A `Mixer` through the `amixer` command."""

    def __init__(self, card: str, control: str, timeout_s: float = 2.0) -> None:
        self.card, self.control, self.timeout_s = card, control, timeout_s
        self.name = f"alsa-mixer:{card or 'default'}/{control}"

    def read(self) -> tuple[int, float]:
        return parse_playback(self._run("sget", self.control), self.control)

    def set_db(self, db: float) -> None:
        self._run("sset", self.control, f"{db:.2f}dB")

    def set_raw(self, raw: int) -> None:
        self._run("sset", self.control, str(raw))

    def _run(self, *args: str) -> str:
        card = ("-c", self.card) if self.card else ()
        try:
            # `--`: a negative level (-37.25dB) is not an option (amixer's getopt permutes otherwise)
            done = subprocess.run(["amixer", *card, "--", *args], capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DuckError(f"{self.name}: amixer failed: {exc}") from exc
        if done.returncode:
            raise DuckError(f"{self.name}: {done.stderr.strip() or f'amixer exited {done.returncode}'}")
        return done.stdout


class AlsaMixerDuck:
    """The `DuckBackend` lowering an ALSA mixer control."""

    def __init__(self, zone: str, settings: AlsaMixerDuckSettings, restore_dir: Path,
                 mixer: Mixer | None = None) -> None:  # fmt: skip
        self.mixer = mixer or Amixer(settings.card, settings.control)
        self.name = self.mixer.name
        self.record = RestoreRecord(restore_dir, f"{zone}.duck-alsa")
        self._before: tuple[int, float] | None = None

    def lower(self, announcement: str, level_db: float, ramp_ms: int) -> None:
        raw, db = self.mixer.read()
        self.record.remember({"raw": str(raw), "db": repr(db)})
        pending = self.record.pending()  # a crash's record wins: the level before us
        self._before = (int(pending["raw"]), float(pending["db"]))

    def step(self, db: float) -> None:
        if self._before is not None:
            self.mixer.set_db(self._before[1] + db)

    def raise_back(self, announcement: str, ramp_ms: int) -> None:
        """Nothing to say: the steps raise it."""

    def hand_over(self, previous: str, announcement: str, level_db: float) -> None:
        """It stays where it is."""

    def restored(self) -> None:
        before, self._before = self._before, None
        if before is not None:
            self.mixer.set_raw(before[0])
        self.record.forget(["raw", "db"])

    def recover(self) -> bool:
        raw = self.record.pending().get("raw")
        if raw is not None and raw.lstrip("-").isdigit():
            self.mixer.set_raw(int(raw))
        self.record.forget(["raw", "db"])
        return True
