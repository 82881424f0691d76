"""Resident bytes of one mapped file in this process, from /proc/self/smaps (memory tests)."""

from pathlib import Path


def resident_bytes_of(path: Path) -> int:
    """Rss of this process's mappings of `path`."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split(None, 5)
        if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header line
            inside = len(fields) == 6 and fields[5].strip() == str(Path(path).resolve())
        elif inside and line.startswith("Rss:"):
            total += int(fields[1]) * 1024
    return total
