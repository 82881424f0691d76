"""The OpenVINO compile cache of the daemons a test session starts: compiled once, copied to each.

`qwen3tts run` on a tiny bundle spends about 3 of its 7 s of CPU compiling its graphs, and well under
one loading them from the compile cache an earlier daemon on the same bundle wrote (docs/benchmarks.md);
the suite starts some 35 daemons. They do not share one cache directory all the same: OpenVINO writes
a blob in place and maps the blobs it loads, so a daemon writing a blob while another maps it could
make that one fault. Each daemon has its own ($XDG_CACHE_HOME/qwen3tts/openvino, the default the
tests' configurations keep), filled before it starts with a copy of every blob the session has kept;
once it has exited, the blobs it wrote are kept — renamed into place whole, never written over in
place. A blob a killed daemon left half-written costs nothing but time: OpenVINO finds it unreadable,
compiles and writes it again, and the next daemon's whole copy replaces the kept one.

`keep_in(dir)` (tests/conftest.py, once per session) turns this on; without it `popen` only starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

_kept: Path | None = None
_watched: list[tuple[subprocess.Popen, Path]] = []  # (daemon, its cache directory) until it has exited


def keep_in(directory: Path) -> None:
    """Keep the session's blobs in `directory` (one for all xdist workers: files are only renamed into it)."""
    global _kept
    directory.mkdir(parents=True, exist_ok=True)
    _kept = directory


def popen(command: list[str], cache_home: Path, env: dict[str, str] | None = None, **kwargs):
    """subprocess.Popen(command) with XDG_CACHE_HOME=`cache_home`, its compile cache filled first."""
    env = {**(os.environ if env is None else env), "XDG_CACHE_HOME": str(cache_home)}
    cache = cache_home / "qwen3tts" / "openvino"
    if _kept is not None:
        _keep_what_exited_daemons_wrote()
        cache.mkdir(parents=True, exist_ok=True)
        for blob in _kept.glob("*.blob"):
            if not (cache / blob.name).exists():
                shutil.copyfile(blob, cache / blob.name)
    process = subprocess.Popen(command, env=env, **kwargs)
    if _kept is not None:
        _watched.append((process, cache))
    return process


def _keep_what_exited_daemons_wrote() -> None:
    assert _kept is not None
    for entry in list(_watched):
        process, cache = entry
        if process.poll() is None:
            continue
        _watched.remove(entry)
        for blob in cache.glob("*.blob"):
            kept = _kept / blob.name
            if kept.exists() and kept.stat().st_size == blob.stat().st_size:
                continue
            part = _kept / f".{blob.name}.{os.getpid()}.part"  # the other workers' copies are named apart
            shutil.copyfile(blob, part)
            os.replace(part, kept)  # whole, at once: a copy being made of the old one keeps reading it
