"""The phrase cache: a finished announcement's audio on disk, replayed without synthesis.

An entry is keyed by everything that determines the audio: the normalised text, voice, language,
instruct, seed, the bundle's hash and the sampling settings (PhraseCache.key). Unseeded requests are
keyed with seed None: a recurring announcement then always replays the first rendering, which is the
point (a `repeat` sounds the same).

On disk one file per entry, `<64 hex digits>.pcm`: a magic line, the SHA-256 of the samples, then the
float32 little-endian samples (bit-identical on replay). The checksum turns a truncated or damaged file
into a miss (and the file is removed) instead of noise on the loudspeaker. Files are written to a
temporary name and renamed, so a crash never leaves half an entry under a real name. The index of
entries (size, recency) lives in memory, rebuilt from the directory at start; a hit touches the file's
mtime so the least-recently-used order survives restarts. Total size stays under `max_bytes`.
Keys are hex digests made here, and every path is built from a validated key: nothing a caller passes
can name a file outside the directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MAGIC = b"qwen3tts-pcm-f32le-1\n"
SUFFIX = ".pcm"
TMP_PREFIX = ".tmp-"
_KEY = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class PhraseCacheStats:
    entries: int
    bytes: int  # on disk, headers included
    max_bytes: int
    hits: int
    misses: int
    evictions: int


def normalise_text(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, trimmed: spellings that sound the same, one key."""
    return " ".join(unicodedata.normalize("NFC", text).split())


class PhraseCache:
    """`PhraseCache(directory, max_bytes)`: key() -> get()/put(); thread-safe."""

    def __init__(self, directory: Path, max_bytes: int):
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.directory = Path(directory)
        # entries are named as str, not Path: pathlib interns every part it parses, and a name per new
        # phrase would churn CPython's interned-strings table (docs/operations.md, "Memory")
        self._dir = str(self.directory)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._index: OrderedDict[str, int] = OrderedDict()  # key -> file size, least recent first
        self._bytes = 0
        self._hits = self._misses = self._evictions = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        self._rebuild_index()

    @staticmethod
    def key(
        text: str,
        *,
        voice: str | None,
        language: str,
        instruct: str | None,
        seed: int | None,
        bundle_hash: str,
        sampling: Mapping[str, object],
    ) -> str:
        """64 hex digits naming the audio these inputs produce (canonical JSON, SHA-256)."""
        fields = {
            "text": normalise_text(text),
            "voice": voice or None,
            "language": language.lower(),
            "instruct": instruct or None,
            "seed": seed,
            "bundle": bundle_hash,
            "sampling": {str(k): sampling[k] for k in sorted(sampling)},
        }
        canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def get(self, key: str) -> np.ndarray | None:
        """The cached float32 samples, or None (miss; a damaged entry is removed and is a miss)."""
        path = self._path(key)
        with self._lock:
            if key not in self._index:
                self._misses += 1
                return None
            pcm = _read_entry(path)
            if pcm is None:
                log.warning("phrase cache entry %s is damaged; removed", key)
                self._remove(key)
                self._misses += 1
                return None
            self._index.move_to_end(key)
            self._hits += 1
        with contextlib.suppress(OSError):
            os.utime(path)  # recency that survives a restart
        return pcm

    def put(self, key: str, pcm: np.ndarray) -> bool:
        """Store `pcm` under `key`, evicting the least recently used; False when it was not stored.

        Never raises for disk trouble (full, read-only): the announcement already played, a cache
        failure must not fail it.
        """
        path = self._path(key)
        samples = np.ascontiguousarray(pcm, dtype="<f4").reshape(-1)
        payload = samples.tobytes()
        size = len(MAGIC) + 32 + len(payload)
        if size > self.max_bytes:
            return False
        with self._lock:
            if key in self._index:
                self._remove(key)
            while self._bytes + size > self.max_bytes and self._index:
                self._remove(next(iter(self._index)))
                self._evictions += 1
            try:
                _write_atomically(path, MAGIC + hashlib.sha256(payload).digest() + payload)
            except OSError as exc:
                log.warning("phrase cache: cannot store %s: %s", key, exc)
                return False
            self._index[key] = size
            self._bytes += size
        return True

    def stats(self) -> PhraseCacheStats:
        with self._lock:
            return PhraseCacheStats(
                len(self._index), self._bytes, self.max_bytes, self._hits, self._misses, self._evictions
            )

    # ---- internals (the lock is held) ----

    def _path(self, key: str) -> str:
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(f"not a phrase cache key: {key!r:.80}")
        return os.path.join(self._dir, f"{key}{SUFFIX}")

    def _remove(self, key: str) -> None:
        self._bytes -= self._index.pop(key, 0)
        try:
            os.unlink(self._path(key))
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("phrase cache: cannot remove %s: %s", key, exc)

    def _rebuild_index(self) -> None:
        """Entries by mtime (oldest first); leftovers of interrupted writes are removed."""
        entries = []
        for path in self.directory.iterdir():
            if path.name.startswith(TMP_PREFIX):
                path.unlink(missing_ok=True)
            elif path.suffix == SUFFIX and _KEY.fullmatch(path.stem) and path.is_file():
                stat = path.stat()
                entries.append((stat.st_mtime_ns, path.stem, stat.st_size))
        for _, key, size in sorted(entries):
            self._index[key] = size
            self._bytes += size
        while self._bytes > self.max_bytes and self._index:  # the bound may have shrunk
            self._remove(next(iter(self._index)))
            self._evictions += 1
        log.info("phrase cache %s: %d entries, %d bytes", self.directory, len(self._index), self._bytes)


def _read_entry(path: str) -> np.ndarray | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    header = len(MAGIC) + 32
    if len(data) < header or not data.startswith(MAGIC) or (len(data) - header) % 4:
        return None
    payload = data[header:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC) : header]:
        return None
    return np.frombuffer(payload, dtype="<f4").astype(np.float32)


def _write_atomically(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
