"""Map a weight file that the native decode reads in place in 2 MiB pages.

The fused code predictor reads its INT8 matrices from the bundle's `.bin`, memory-mapped by OpenVINO,
at every step: 111 MB per step of the 0.6B model, thousands of times what the TLB covers in 4 KiB
pages, so the stream pays a page-table walk every 4 KiB. Mapped in 2 MiB pages, the frame at batch 1
took 0.95-0.96 of the time on Zen 3, and as long at batch 8 (docs/benchmarks.md, "the AVX2 kernel's
decode row and 2 MiB pages").

Linux maps a file in 2 MiB pages where the page cache holds it in 2 MiB folios and the mapping is
aligned (it aligns large file mappings); a fault in a mapping advised MADV_HUGEPAGE reads the file
into such folios where the filesystem supports large folios (measured: ext4 on Linux 6.18). Pages
already cached in small folios stay small, so this drops this process's pages of the file, evicts
the file's unmapped pages from the page cache, advises MADV_HUGEPAGE and reads it all back now
(MADV_POPULATE_READ), not in the first request. The cost is reading the file again at start-up.

Everything here is advice: a kernel, filesystem or setting (transparent_hugepage=never) that cannot
do it leaves small pages, and a read-only file mapping always reads the same values.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from qwen3tts.runtime.weight_pages import MADV_DONTNEED, MAPS, libc_madvise, read_only_mappings

log = logging.getLogger(__name__)

MADV_HUGEPAGE = 14  # Linux, every architecture OpenVINO supports
MADV_POPULATE_READ = 22  # Linux 5.14
SMAPS = Path("/proc/self/smaps")


def map_in_huge_pages(path: Path) -> int:
    """Ask for `path`'s read-only mappings in this process in 2 MiB pages; returns the bytes of them now
    mapped so (0 where nothing could be: no mapping, no /proc, no madvise)."""
    try:
        mappings = read_only_mappings(path, MAPS.read_text())
        madvise = libc_madvise()
    except (OSError, AttributeError) as exc:
        log.debug("cannot map %s in 2 MiB pages: %s", path, exc)
        return 0
    if not mappings:
        return 0
    for start, length in mappings:
        madvise(start, length, MADV_DONTNEED)  # this process's small pages of it: dropped, never wrong
    try:
        evict_from_page_cache(path)
    except OSError as exc:
        log.debug("cannot evict %s from the page cache: %s", path, exc)
    for start, length in mappings:
        madvise(start, length, MADV_HUGEPAGE)
        madvise(start, length, MADV_POPULATE_READ)  # fails on kernels before 5.14: the first step reads it
    return huge_mapped_bytes(path)


def evict_from_page_cache(path: Path, write_back: bool = False) -> None:
    """Drop `path`'s cached pages that nobody maps (clean ones only: `write_back` first for a file just
    written), so that the next read reads the file again."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if write_back:
            os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def huge_mapped_bytes(path: Path, smaps_text: str | None = None) -> int:
    """Bytes of `path`'s read-only mappings mapped in 2 MiB pages (smaps' FilePmdMapped), in this process
    or in the given /proc/<pid>/smaps text."""
    if smaps_text is None:
        try:
            smaps_text = SMAPS.read_text()
        except OSError:
            return 0
    target, total, inside = str(Path(path).resolve()), 0, False
    for line in smaps_text.splitlines():
        fields = line.split(None, 5)
        if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
            inside = len(fields) == 6 and "w" not in fields[1] and fields[5].strip() == target
        elif inside and fields[:1] == ["FilePmdMapped:"]:
            total += int(fields[1]) * 1024
    return total
