"""Asking for a weight file's mapping in 2 MiB pages (runtime/huge_pages.py): what it counts, and that
it never changes what the mapping reads. Whether the kernel grants 2 MiB pages depends on the machine
(its filesystem, transparent_hugepage), so the test checks the advice the mapping carries."""

import mmap
from pathlib import Path

import numpy as np

from qwen3tts.runtime.huge_pages import huge_mapped_bytes, map_in_huge_pages

SMAPS = """\
7f0000000000-7f0000600000 r--s 00000000 fe:00 42                         {path}
Size:               6144 kB
Rss:                6144 kB
FilePmdMapped:      4096 kB
VmFlags: rd mr me ms hg
7f0000600000-7f0000800000 rw-p 00000000 fe:00 42                         {path}
FilePmdMapped:      2048 kB
7f0000800000-7f0000a00000 r--s 00000000 fe:00 43                         {other}
FilePmdMapped:      2048 kB
7f0000a00000-7f0000c00000 rw-p 00000000 00:00 0
FilePmdMapped:      2048 kB
7f0000c00000-7f0000e00000 r--p 00200000 fe:00 42                         {path}
FilePmdMapped:      2048 kB
"""


def test_only_the_files_read_only_mappings_are_counted(tmp_path):
    path, other = tmp_path / "code_predictor.bin", tmp_path / "talker.bin"
    text = SMAPS.format(path=path.resolve(), other=other.resolve())
    assert huge_mapped_bytes(path, text) == (4096 + 2048) * 1024
    assert huge_mapped_bytes(other, text) == 2048 * 1024
    assert huge_mapped_bytes(tmp_path / "absent.bin", text) == 0


def test_the_mapping_reads_the_same_bytes_after_and_the_count_is_the_kernels(tmp_path):
    path = tmp_path / "weights.bin"
    data = np.random.default_rng(0).integers(0, 256, 6 << 20, dtype=np.uint8)
    path.write_bytes(data.tobytes())
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = np.frombuffer(mapped, np.uint8)
        assert int(view[::4096].sum()) == int(data[::4096].sum())  # touched in small pages first
        granted = map_in_huge_pages(path)
        assert "hg" in _vm_flags(path)  # advised MADV_HUGEPAGE: what the kernel grants is its own affair
        assert 0 <= granted <= len(data) and granted % (2 << 20) == 0
        np.testing.assert_array_equal(view, data)
        del view


def _vm_flags(path: Path) -> list[str]:
    """The VmFlags of this process's mapping of `path` (/proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:
            inside = fields[-1] == str(path.resolve())
        elif inside and fields[0] == "VmFlags:":
            return fields[1:]
    raise AssertionError(f"{path} is not mapped")


def test_a_file_nobody_maps_is_left_alone(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\0" * 4096)
    assert map_in_huge_pages(path) == 0
    assert map_in_huge_pages(Path("/nonexistent/weights.bin")) == 0
