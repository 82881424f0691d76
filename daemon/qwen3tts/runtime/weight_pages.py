"""Give back the resident pages of a bundle weight file once the CPU plugin has copied what it needs.

OpenVINO maps each graph's `.bin` read-only (ENABLE_MMAP, the default). The CPU plugin repacks every
compressed-weight FullyConnected into its own anonymous buffer on the first inference, and scans the
other constants at compile; after that the mapped file is barely read, yet every page it touched
stays in the process's resident set: the talker's 424 MiB and the code predictor's 237 MiB counted
twice, once as file and once as the repacked copy (docs/benchmarks.md, issue 16 memory).

`madvise(MADV_DONTNEED)` on a read-only file mapping only unmaps the pages from this process: the
data stays in the page cache (reclaimable, not ours), and a later read faults it back in from
there, so releasing pages is always safe — at worst it costs page faults, never wrong values.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

MADV_DONTNEED = 4  # Linux; the same value on every architecture OpenVINO supports
MAPS = Path("/proc/self/maps")


def read_only_mappings(path: Path, maps_text: str) -> list[tuple[int, int]]:
    """(start, length) of every mapping in a /proc/<pid>/maps text that nobody may write, of the file
    `path` or, if `path` is a directory, of any file below it."""
    found = []
    for address, _ in _read_only(path, maps_text):
        start, end = (int(value, 16) for value in address.split("-"))
        found.append((start, end - start))
    return found


def mapped_files(directory: Path) -> set[Path]:
    """The files below `directory` this process maps read-only now (e.g. compile-cache blobs)."""
    try:
        return {Path(mapped) for _, mapped in _read_only(directory, MAPS.read_text())}
    except OSError:
        return set()


def _read_only(path: Path, maps_text: str):
    """(address range, mapped file) of the read-only mappings of `path` or of files below it."""
    # Plain string tests: the kernel writes each mapped file's absolute, resolved path, and a process
    # maps thousands of files (every library, every graph); Path.is_relative_to per line cost a test
    # worker 15 ms per call, a daemon's load one call per graph.
    target = str(Path(path).resolve())
    below = target.rstrip("/") + "/"
    for line in maps_text.splitlines():
        if target not in line:
            continue
        fields = line.split(None, 5)
        if len(fields) == 6 and "w" not in fields[1]:
            mapped = fields[5].strip()
            if mapped == target or mapped.startswith(below):
                yield fields[0], mapped


def libc_madvise():
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


def release_file_pages(path: Path) -> int:
    """Drop this process's resident pages of every read-only mapping of `path` (a file, or every file
    below a directory such as the compile cache); returns the bytes advised.

    0 where there is nothing to release or no way to (no /proc, weights not memory-mapped, not Linux).
    """
    try:
        mappings = read_only_mappings(path, MAPS.read_text())
    except OSError:
        return 0
    if not mappings:
        return 0
    try:
        madvise = libc_madvise()
    except (OSError, AttributeError) as exc:  # no libc madvise: keep the pages, lose nothing
        log.debug("cannot release pages of %s: %s", path, exc)
        return 0
    released = 0
    for start, length in mappings:
        if madvise(start, length, MADV_DONTNEED) != 0:
            err = ctypes.get_errno()
            log.debug("madvise on %s failed: %s", path, os.strerror(err))
            continue
        released += length
    return released
