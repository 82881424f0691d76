"""The interned-strings table takes its lasting size at start (service/interned_strings.py).

Each case is a fresh interpreter with the daemon's imports, parsing as many new paths as a long service
would (pathlib interns every part): without the settling its RSS takes the one-time step a soak showed
(the table rebuilt at twice the size), after it none. The first case is the control: if CPython stopped
growing its table this way, it fails and says so, rather than the second passing for nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DAEMON = Path(__file__).resolve().parents[3] / "daemon"
PATHS = 100_000  # about 20,000 requests' worth of spool, temporary and WAV file names

PROGRAM = """
import pathlib, sys
import qwen3tts.service.service
from qwen3tts.service.interned_strings import settle_interned_strings
from qwen3tts.service.memory_trim import glibc_malloc_trim

trim = glibc_malloc_trim()

def rss_mib():
    trim(0)  # what the daemon's periodic trim gives back is not growth
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

if sys.argv[1] == "settled":
    settle_interned_strings()
before = rss_mib()
for n in range(int(sys.argv[2])):
    pathlib.Path(f"/var/lib/qwen3tts/spool/{n:012d}.json")
print(rss_mib() - before)
"""


def growth_mib(mode: str) -> float:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode, str(PATHS)],
        capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(DAEMON)}, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return float(result.stdout)


@pytest.mark.slow
def test_new_path_names_grow_rss_once_without_the_settling_and_not_after_it():
    unsettled = growth_mib("unsettled")
    assert unsettled > 1.0, f"the control: {unsettled:.2f} MiB; CPython's interned-strings table changed?"
    settled = growth_mib("settled")
    assert settled < 0.5, f"{settled:.2f} MiB after settling (without: {unsettled:.2f})"
