"""The official PyTorch implementation as a subprocess (scripts/reference/bench_reference.py --serve).

It runs in the reference venv, loads the same checkpoint once, and answers one run per request, so
`qwen3tts bench --vs-reference` can alternate product and reference runs and pair them up: both
sides of a pair see the same machine load.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

from qwen3tts.errors import NotAvailableError

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "reference" / "bench_reference.py"


class ReferenceProcess:
    def __init__(
        self,
        python: Path,
        checkpoint: Path,
        frames: int,
        text: str,
        speaker: str | None,
        language: str,
        threads: int,
        script: Path = SCRIPT,
    ):
        if not Path(python).exists():
            raise NotAvailableError(
                f"reference python {python} not found (create it with scripts/reference/setup.sh)"
            )
        if not script.exists():
            raise NotAvailableError(f"{script} not found: --vs-reference needs a source checkout")
        command = [
            str(python),
            str(script),
            "--serve",
            "--checkpoint",
            str(checkpoint),
            "--frames",
            str(frames),
            "--text",
            text,
            "--language",
            language,
            "--threads",
            str(threads),
        ]
        if speaker:
            command += ["--speaker", speaker]
        log.info("starting the reference implementation: %s", " ".join(command))
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.facts: dict | None = None

    def wait_ready(self) -> dict:
        if self.facts is None:
            self.facts = self._read()
        return self.facts

    def run(self, batch: int) -> dict:
        self.wait_ready()
        self._process.stdin.write(json.dumps({"batch": batch}) + "\n")
        self._process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._process.stdin.write(json.dumps({"quit": True}) + "\n")
                self._process.stdin.flush()
                self._process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()

    def _read(self) -> dict:
        while True:
            line = self._process.stdout.readline()
            if not line:
                code = self._process.wait()
                raise NotAvailableError(
                    f"the reference implementation exited with code {code} (see its stderr)"
                )
            if line.startswith("{"):  # anything else is chatter from the official code
                return json.loads(line)
