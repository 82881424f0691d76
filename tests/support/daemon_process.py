"""`qwen3tts run` as a child process on a JSON config (JSON is YAML), with its own state and cache.

Its output goes to `<dir>/daemon.log`; `log_tail()` is what a failing test prints. Stopped by its own pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


class DaemonProcess:
    def __init__(self, directory: Path, sections: dict, env: dict[str, str] | None = None) -> None:
        """`env`: variables set for the daemon besides its own state and cache directories."""
        self.dir = directory
        self.config = directory / "qwen3tts.yaml"
        self.config.write_text(json.dumps(sections))
        env = {**os.environ, "XDG_STATE_HOME": str(directory / "state"), "XDG_CACHE_HOME": str(directory),
               **(env or {})}  # fmt: skip
        with open(directory / "daemon.log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "qwen3tts", "--config", str(self.config), "run"],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        return (self.dir / "daemon.log").read_text(errors="replace")[-chars:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
