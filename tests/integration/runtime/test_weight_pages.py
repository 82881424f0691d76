"""Releasing a mapped file's pages shrinks the resident set and never changes what is read."""

import mmap

import numpy as np
from resident import resident_bytes_of

from qwen3tts.runtime.weight_pages import mapped_files, read_only_mappings, release_file_pages


def test_release_gives_back_the_pages_of_a_read_only_mapping_and_the_data_reads_back(tmp_path):
    path = tmp_path / "weights.bin"
    data = np.random.default_rng(0).integers(-128, 128, size=8 << 20, dtype=np.int8)
    data.tofile(path)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mapped:
        view = np.frombuffer(mapped, dtype=np.int8)
        checksum = int(view.sum(dtype=np.int64))  # touches every page
        assert resident_bytes_of(path) >= 7 << 20

        released = release_file_pages(path)

        assert released >= 8 << 20
        assert resident_bytes_of(path) < 1 << 20
        assert int(view.sum(dtype=np.int64)) == checksum == int(data.sum(dtype=np.int64))
        del view


def test_a_directory_releases_every_file_mapped_below_it(tmp_path):
    paths = [tmp_path / "cache" / f"{i}.blob" for i in range(2)]
    paths[0].parent.mkdir()
    for path in paths:
        np.ones(2 << 20, dtype=np.uint8).tofile(path)
    maps = [np.memmap(path, dtype=np.uint8, mode="r") for path in paths]
    assert all(int(m.sum()) == 2 << 20 for m in maps)

    assert release_file_pages(tmp_path / "cache") >= 4 << 20
    assert all(resident_bytes_of(path) < 1 << 20 for path in paths)
    del maps


def test_mapped_files_names_the_read_only_files_mapped_below_a_directory(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    blob, state = cache / "a.blob", cache / "state.bin"
    for path in (blob, state):
        np.ones(1 << 16, dtype=np.uint8).tofile(path)
    assert mapped_files(cache) == set()
    maps = [np.memmap(blob, dtype=np.uint8, mode="r"), np.memmap(state, dtype=np.uint8, mode="r+")]
    assert mapped_files(cache) == {blob.resolve()}
    assert mapped_files(tmp_path / "elsewhere") == set()
    del maps


def test_writable_mappings_are_never_released(tmp_path):
    path = tmp_path / "state.bin"
    np.zeros(1 << 20, dtype=np.uint8).tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r+")
    mapped[:] = 7  # dirty pages a release would throw away
    assert release_file_pages(path) == 0
    assert int(mapped.sum()) == 7 << 20
    del mapped


def test_only_the_named_file_and_read_only_lines_of_a_maps_text_are_picked(tmp_path):
    target = tmp_path / "talker.bin"
    maps_text = "\n".join(
        [
            f"7f0000000000-7f0000100000 r--s 00000000 08:01 42 {target}",
            f"7f0000200000-7f0000300000 rw-s 00000000 08:01 42 {target}",
            f"7f0000400000-7f0000500000 r--s 00000000 08:01 43 {target}.other",
            "7f0000600000-7f0000700000 rw-p 00000000 00:00 0 [heap]",
            "7f0000800000-7f0000900000 rw-p 00000000 00:00 0",
            f"7f0000a00000-7f0000b00000 r--s 00000000 08:01 44 {tmp_path}-sibling/talker.bin",
        ]
    )
    assert read_only_mappings(target, maps_text) == [(0x7F0000000000, 0x100000)]
    assert read_only_mappings(tmp_path, maps_text) == [(0x7F0000000000, 0x100000), (0x7F0000400000, 0x100000)]
