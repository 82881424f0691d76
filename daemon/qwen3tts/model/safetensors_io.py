"""The safetensors file format with numpy only: memory-mapped reading and deterministic writing.

Layout: an 8-byte little-endian header length N, N bytes of JSON header
(`{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`), then the raw
little-endian tensor bytes. Offsets are relative to the end of the header.

Reading never copies F32 tensors (they are views into the memory map); BF16 and F16 are widened to
float32 on access, tensor by tensor, so a 4 GB bf16 checkpoint costs memory only for what is used.
Writing is deterministic: tensors in sorted name order, a fixed header, no timestamps.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwen3tts.errors import CheckpointError

# safetensors dtype code -> numpy storage dtype (BF16 is stored as raw 16-bit words)
STORAGE_DTYPES: dict[str, np.dtype] = {
    "BF16": np.dtype("<u2"),
    "F16": np.dtype("<f2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
FLOAT_DTYPES = ("BF16", "F16", "F32", "F64")
_MAX_HEADER_BYTES = 100 * 1024 * 1024  # the reference implementation's own limit
_WRITE_METADATA = {"format": "pt"}  # what torch-saved release files carry


@dataclass(frozen=True)
class TensorInfo:
    """One header entry: where a tensor lives in the file and how it is stored."""

    dtype: str  # safetensors dtype code, e.g. "BF16"
    shape: tuple[int, ...]
    begin: int  # byte offset from the start of the data section
    end: int


class SafetensorsFile(Mapping[str, np.ndarray]):
    """A read-only, memory-mapped safetensors file; `file[name]` is a numpy array.

    Floating-point tensors come back as float32 (F32 without a copy); integer tensors keep their
    integer dtype, since widening them to float would be lossy.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.tensors, self.metadata, data_start = read_header(self.path)
        has_data = self.path.stat().st_size > data_start  # numpy cannot map an empty range
        self._data = (
            np.memmap(self.path, dtype=np.uint8, mode="r", offset=data_start)
            if has_data
            else np.zeros(0, np.uint8)
        )

    def __getitem__(self, name: str) -> np.ndarray:
        stored = self.raw(name)
        dtype = self.tensors[name].dtype
        if dtype == "BF16":
            return bf16_bits_to_float32(stored)
        if dtype in FLOAT_DTYPES and dtype != "F32":
            return stored.astype(np.float32)
        return stored

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def __contains__(self, name: object) -> bool:
        return name in self.tensors

    def raw(self, name: str) -> np.ndarray:
        """The tensor in its stored dtype (BF16 as uint16 words), a read-only view of the file."""
        try:
            info = self.tensors[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor {name!r}") from None
        words = self._data[info.begin : info.end].view(STORAGE_DTYPES[info.dtype])
        return words.reshape(info.shape).view(np.ndarray)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensors[name].shape


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, str], int]:
    """Parse and check the header; returns (tensors, metadata, byte offset of the data section)."""
    try:
        file_size = path.stat().st_size
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise CheckpointError(f"{path}: not a safetensors file (shorter than 8 bytes)")
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > min(_MAX_HEADER_BYTES, file_size - 8):
                raise CheckpointError(f"{path}: not a safetensors file (header length {header_len})")
            header = json.loads(f.read(header_len))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: safetensors header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data_size = file_size - 8 - header_len
    tensors = {name: _parse_entry(path, name, entry, data_size) for name, entry in header.items()}
    return tensors, metadata, 8 + header_len


def _parse_entry(path: Path, name: str, entry: object, data_size: int) -> TensorInfo:
    try:
        dtype = entry["dtype"]  # type: ignore[index]
        shape = tuple(int(d) for d in entry["shape"])  # type: ignore[index]
        begin, end = (int(o) for o in entry["data_offsets"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        raise CheckpointError(f"{path}: tensor {name}: malformed header entry {entry!r}") from None
    if dtype not in STORAGE_DTYPES:
        raise CheckpointError(f"{path}: tensor {name}: unsupported dtype {dtype}")
    expected = int(np.prod(shape, dtype=np.int64)) * STORAGE_DTYPES[dtype].itemsize
    if not 0 <= begin <= end <= data_size or end - begin != expected:
        raise CheckpointError(
            f"{path}: tensor {name}: data_offsets [{begin}, {end}] do not fit shape {list(shape)} "
            f"{dtype} in a data section of {data_size} bytes"
        )
    return TensorInfo(dtype, shape, begin, end)


def bf16_bits_to_float32(words: np.ndarray) -> np.ndarray:
    """bfloat16 is the top half of a float32: widen exactly by shifting the bits up."""
    return (words.astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bfloat16 (ties to even), as torch's `.to(torch.bfloat16)` does."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))
    rounded = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():  # rounding could carry a NaN into infinity; keep it a quiet NaN
        rounded[nan] = 0x7FC0
    return rounded


def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """Convert an array to the storage words of a safetensors dtype (little-endian, C order)."""
    if dtype == "BF16":
        return float32_to_bf16_bits(values)
    return np.ascontiguousarray(values, dtype=STORAGE_DTYPES[dtype])


def write_safetensors(path: str | Path, tensors: Mapping[str, np.ndarray], dtype: str | None = None) -> None:
    """Write arrays to `path`; `dtype` (e.g. "BF16") converts every tensor, else each keeps its own.

    Arrays of numpy dtypes without a safetensors code must be given an explicit `dtype`.
    """
    codes = {np.dtype(d): code for code, d in STORAGE_DTYPES.items() if code != "BF16"}
    layout = {}
    for name, array in tensors.items():
        code = dtype or codes.get(np.dtype(array.dtype).newbyteorder("<"))
        if code is None:
            raise ValueError(f"tensor {name}: numpy dtype {array.dtype} has no safetensors code; pass dtype")
        layout[name] = (tuple(array.shape), code)
    write_safetensors_streamed(path, layout, lambda name: [tensors[name]])


def write_safetensors_streamed(
    path: str | Path,
    layout: Mapping[str, tuple[tuple[int, ...], str]],
    chunks: Callable[[str], Iterable[np.ndarray]],
) -> None:
    """Write tensors one chunk at a time, so a multi-GB file never has to be in memory at once.

    `layout` maps name -> (shape, dtype code); `chunks(name)` yields that tensor's values in C order
    (any chunk shapes whose sizes add up). The header is written first from `layout` alone.
    """
    names = sorted(layout)
    header: dict[str, object] = {"__metadata__": _WRITE_METADATA}
    offset = 0
    for name in names:
        shape, dtype = layout[name]
        size = int(np.prod(shape, dtype=np.int64)) * STORAGE_DTYPES[dtype].itemsize
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)  # 8-byte alignment of the data section
    with Path(path).open("wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for name in names:
            shape, dtype = layout[name]
            written = 0
            for chunk in chunks(name):
                words = encode(chunk, dtype)
                f.write(words.tobytes())
                written += words.size
            if written != int(np.prod(shape, dtype=np.int64)):
                raise ValueError(f"tensor {name}: wrote {written} values for shape {list(shape)}")
