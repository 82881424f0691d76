"""`qwen3tts run` as a child process on a JSON config (JSON is YAML), with its own state and cache.

Its output goes to `<dir>/daemon.log`; `log_tail()` is what a failing test prints. Stopped by its own pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import compile_cache


class DaemonProcess:
    def __init__(self, directory: Path, sections: dict, env: dict[str, str] | None = None) -> None:
        """`env`: variables set for the daemon besides its own state and cache directories."""
        self.dir = directory
        self.config = directory / "qwen3tts.yaml"
        self.config.write_text(json.dumps(sections))
        cache_home = Path((env or {}).get("XDG_CACHE_HOME", directory))  # not the session's: its own
        env = {**os.environ, "XDG_STATE_HOME": str(directory / "state"), **(env or {})}
        with open(directory / "daemon.log", "wb") as log:
            self.process = compile_cache.popen(
                [sys.executable, "-m", "qwen3tts", "--config", str(self.config), "run"],
                cache_home, env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        return (self.dir / "daemon.log").read_text(errors="replace")[-chars:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
