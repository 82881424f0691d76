"""PhraseCache: identical samples on a hit, a size bound kept by LRU eviction, damage is a miss."""

import os

import numpy as np
import pytest

from qwen3tts.appliance.announcements.phrase_cache import MAGIC, PhraseCache

HEADER = len(MAGIC) + 32
KEY_FIELDS = dict(voice="anna", language="english", instruct=None, seed=7, bundle_hash="b1", sampling={})


def pcm(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, n).astype(np.float32)


def key(text: str, **changes) -> str:
    return PhraseCache.key(text, **{**KEY_FIELDS, **changes})


def test_a_hit_returns_bit_identical_samples_also_after_a_restart(tmp_path):
    cache = PhraseCache(tmp_path, max_bytes=1 << 20)
    audio = pcm(1000)
    k = key("Doors closing.")
    assert cache.get(k) is None
    assert cache.put(k, audio)
    np.testing.assert_array_equal(cache.get(k), audio)
    again = PhraseCache(tmp_path, max_bytes=1 << 20)
    np.testing.assert_array_equal(again.get(k), audio)
    stats = cache.stats()
    assert (stats.entries, stats.bytes, stats.hits, stats.misses) == (1, HEADER + 4000, 1, 1)


def test_the_key_covers_every_input_and_normalises_only_the_text_spelling():
    base = key("Doors  closing.")
    assert key(" Doors closing. ") == base  # whitespace runs and ends do not change the speech
    changed = [
        key("Doors closing!"),
        key("Doors  closing.", voice="ben"),
        key("Doors  closing.", language="german"),
        key("Doors  closing.", instruct="whisper"),
        key("Doors  closing.", seed=8),
        key("Doors  closing.", seed=None),
        key("Doors  closing.", bundle_hash="b2"),
        key("Doors  closing.", sampling={"temperature": 0.5}),
    ]
    assert base not in changed and len(set(changed)) == len(changed)


def test_eviction_drops_the_least_recently_used_and_keeps_the_size_bound(tmp_path):
    entry = HEADER + 400  # 100 samples
    cache = PhraseCache(tmp_path, max_bytes=3 * entry)
    keys = [key(f"phrase {i}") for i in range(4)]
    for k in keys[:3]:
        cache.put(k, pcm(100))
    assert cache.get(keys[0]) is not None  # phrase 0 is now the most recently used
    cache.put(keys[3], pcm(100))  # evicts phrase 1, the least recently used
    assert [cache.get(k) is not None for k in keys] == [True, False, True, True]
    stats = cache.stats()
    assert (stats.entries, stats.bytes, stats.evictions) == (3, 3 * entry, 1)
    on_disk = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert on_disk == stats.bytes <= cache.max_bytes
    assert not cache.put(key("too long"), pcm(1000))  # larger than the whole bound: not stored
    assert cache.stats().entries == 3


def test_the_lru_order_survives_a_restart_and_a_smaller_bound_evicts_at_start(tmp_path):
    cache = PhraseCache(tmp_path, max_bytes=1 << 20)
    keys = [key(f"phrase {i}") for i in range(3)]
    for i, k in enumerate(keys):
        cache.put(k, pcm(100))
        os.utime(tmp_path / f"{k}.pcm", ns=(10**18 + i, 10**18 + i))  # phrase 0 oldest
    os.utime(tmp_path / f"{keys[0]}.pcm", ns=(10**18 + 9, 10**18 + 9))  # ... until it is used again
    smaller = PhraseCache(tmp_path, max_bytes=2 * (HEADER + 400))
    assert [smaller.get(k) is not None for k in keys] == [True, False, True]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: HEADER + 10],  # truncated mid-sample
        lambda data: data[:5],  # truncated inside the header
        lambda data: data[:HEADER] + bytes([data[HEADER] ^ 1]) + data[HEADER + 1 :],  # one bit flipped
        lambda data: b"RIFF" + data[4:],  # not our format
    ],
)
def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path, damage):
    cache = PhraseCache(tmp_path, max_bytes=1 << 20)
    k = key("Mind the gap.")
    cache.put(k, pcm(50))
    path = tmp_path / f"{k}.pcm"
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get(k) is None
    assert not path.exists() and cache.stats().entries == 0 and cache.stats().bytes == 0
    assert cache.put(k, pcm(50)) and cache.get(k) is not None  # and it can be stored again


@pytest.mark.parametrize("hostile", ["../etc/passwd", "/etc/passwd", "a" * 63, "A" * 64, "0" * 64 + "/x", ""])
def test_a_key_that_is_not_a_digest_never_becomes_a_path(tmp_path, hostile):
    cache = PhraseCache(tmp_path / "phrases", max_bytes=1 << 20)
    with pytest.raises(ValueError, match="not a phrase cache key"):
        cache.get(hostile)
    with pytest.raises(ValueError, match="not a phrase cache key"):
        cache.put(hostile, pcm(10))
    assert list((tmp_path / "phrases").iterdir()) == []


def test_leftovers_of_an_interrupted_write_are_removed_and_unknown_files_ignored(tmp_path):
    (tmp_path / ".tmp-abc").write_bytes(b"half an entry")
    (tmp_path / "notes.txt").write_text("operator's file")
    cache = PhraseCache(tmp_path, max_bytes=1 << 20)
    assert not (tmp_path / ".tmp-abc").exists() and (tmp_path / "notes.txt").exists()
    assert cache.stats().entries == 0


def test_a_full_disk_is_no_error_and_leaves_no_partial_file(tmp_path, monkeypatch):
    cache = PhraseCache(tmp_path, max_bytes=1 << 20)

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("qwen3tts.appliance.announcements.phrase_cache.os.fsync", disk_full)
    assert not cache.put(key("x"), pcm(10))
    assert cache.stats().entries == 0 and list(tmp_path.iterdir()) == []
