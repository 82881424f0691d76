"""safetensors reading/writing with numpy only: round trips, exact bf16, deterministic bytes, errors."""

import json
import struct

import numpy as np
import pytest

from qwen3tts.errors import CheckpointError
from qwen3tts.model.safetensors_io import (
    SafetensorsFile,
    bf16_bits_to_float32,
    float32_to_bf16_bits,
    read_header,
    write_safetensors,
    write_safetensors_streamed,
)


def _raw_file(path, header: dict, data: bytes, pad: bytes = b"") -> None:
    """A safetensors file built by hand from the format description, independent of our writer."""
    header_bytes = json.dumps(header).encode() + pad
    path.write_bytes(struct.pack("<Q", len(header_bytes)) + header_bytes + data)


def test_float32_float16_and_int64_round_trip_exactly(tmp_path):
    rng = np.random.default_rng(1)
    tensors = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": rng.standard_normal(5).astype(np.float16),
        "i64": np.arange(-3, 3, dtype=np.int64).reshape(2, 3),
    }
    write_safetensors(tmp_path / "t.safetensors", tensors)
    read = SafetensorsFile(tmp_path / "t.safetensors")
    assert {name: read.tensors[name].dtype for name in read} == {"f16": "F16", "f32": "F32", "i64": "I64"}
    np.testing.assert_array_equal(read["f32"], tensors["f32"])
    assert read["f16"].dtype == np.float32
    np.testing.assert_array_equal(read["f16"], tensors["f16"].astype(np.float32))
    assert read["i64"].dtype == np.int64
    np.testing.assert_array_equal(read["i64"], tensors["i64"])


def test_bf16_round_trip_is_exact_for_bf16_representable_values(tmp_path):
    words = np.random.default_rng(2).integers(0, 0x7F80, size=(4, 6), dtype=np.uint16)  # finite, positive
    values = bf16_bits_to_float32(words) * np.where(np.arange(6) % 2, 1, -1).astype(np.float32)
    write_safetensors(tmp_path / "b.safetensors", {"w": values}, dtype="BF16")
    read = SafetensorsFile(tmp_path / "b.safetensors")
    assert read.tensors["w"].dtype == "BF16"
    assert read["w"].dtype == np.float32
    np.testing.assert_array_equal(read["w"], values)
    assert read.raw("w").dtype == np.uint16


@pytest.mark.parametrize(
    ("f32_bits", "bf16_bits"),
    [
        (0x3F808000, 0x3F80),  # exact tie, lower half even: stays
        (0x3F818000, 0x3F82),  # exact tie, lower half odd: rounds up to even
        (0x3F808001, 0x3F81),  # above the tie: rounds up
        (0x3F807FFF, 0x3F80),  # below the tie: rounds down
        (0xBF818000, 0xBF82),  # the sign does not change the rule
        (0x7F7FFFFF, 0x7F80),  # float32 max rounds to infinity, as torch does
    ],
)
def test_float32_to_bf16_rounds_to_nearest_even(f32_bits, bf16_bits):
    value = np.array([f32_bits], dtype=np.uint32).view(np.float32)
    assert int(float32_to_bf16_bits(value)[0]) == bf16_bits


def test_nan_stays_nan_in_bf16():
    nan = np.array([0x7FFFFFFF], dtype=np.uint32).view(np.float32)
    assert np.isnan(bf16_bits_to_float32(float32_to_bf16_bits(nan)))[0]


def test_writing_is_deterministic_and_independent_of_insertion_order(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones(3, dtype=np.float32)
    write_safetensors(tmp_path / "1.safetensors", {"b": b, "a": a}, dtype="BF16")
    write_safetensors(tmp_path / "2.safetensors", {"a": a, "b": b}, dtype="BF16")
    assert (tmp_path / "1.safetensors").read_bytes() == (tmp_path / "2.safetensors").read_bytes()


def test_header_is_aligned_sorted_and_carries_pt_metadata(tmp_path):
    write_safetensors(tmp_path / "t.safetensors", {"z": np.zeros(3, np.float32), "a": np.zeros(1, np.int64)})
    raw = (tmp_path / "t.safetensors").read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    assert (8 + header_len) % 8 == 0
    header = json.loads(raw[8 : 8 + header_len])
    assert header.pop("__metadata__") == {"format": "pt"}
    assert list(header) == ["a", "z"]
    assert header["a"]["data_offsets"] == [0, 8]
    assert header["z"]["data_offsets"] == [8, 20]
    assert len(raw) == 8 + header_len + 20


def test_streamed_writing_in_chunks_gives_the_same_bytes_as_whole_arrays(tmp_path):
    big = np.random.default_rng(3).standard_normal((10, 7)).astype(np.float32)
    write_safetensors(tmp_path / "whole.safetensors", {"x": big}, dtype="BF16")
    write_safetensors_streamed(
        tmp_path / "chunks.safetensors", {"x": ((10, 7), "BF16")}, lambda name: [big[:3], big[3:4], big[4:]]
    )
    assert (tmp_path / "whole.safetensors").read_bytes() == (tmp_path / "chunks.safetensors").read_bytes()


def test_streamed_writing_rejects_chunks_that_do_not_fill_the_shape(tmp_path):
    with pytest.raises(ValueError, match=r"tensor x: wrote 6 values for shape \[2, 4\]"):
        write_safetensors_streamed(
            tmp_path / "x.safetensors", {"x": ((2, 4), "F32")}, lambda n: [np.zeros(6)]
        )


def test_float32_tensors_are_read_only_views_of_the_file_not_copies(tmp_path):
    write_safetensors(tmp_path / "t.safetensors", {"w": np.ones((64, 64), np.float32)})
    w = SafetensorsFile(tmp_path / "t.safetensors")["w"]
    assert not w.flags.owndata
    assert not w.flags.writeable


def test_reader_accepts_hand_built_files_with_any_header_order_and_padding(tmp_path):
    data = np.array([1.5, -2.0], np.float32).tobytes() + np.array([7], np.int64).tobytes()
    header = {
        "n": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]},
        "v": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    }
    _raw_file(tmp_path / "h.safetensors", header, data, pad=b"   ")
    read = SafetensorsFile(tmp_path / "h.safetensors")
    assert read.metadata == {}
    np.testing.assert_array_equal(read["v"], [1.5, -2.0])
    assert read["n"].tolist() == [7]
    assert read.shape("v") == (2,)


def test_missing_file_raises_checkpoint_error_naming_it(tmp_path):
    with pytest.raises(CheckpointError, match=r"nope.safetensors: file missing"):
        SafetensorsFile(tmp_path / "nope.safetensors")


def test_garbage_header_raises_checkpoint_error_naming_the_file(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", 4) + b"{{{{")
    with pytest.raises(CheckpointError, match=r"bad.safetensors: safetensors header is not valid JSON"):
        read_header(path)


def test_header_length_beyond_the_file_is_rejected(tmp_path):
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(CheckpointError, match=r"short.safetensors: not a safetensors file"):
        SafetensorsFile(path)


def test_truncated_data_names_the_tensor(tmp_path):
    header = {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    _raw_file(tmp_path / "cut.safetensors", header, b"\0" * 8)
    with pytest.raises(CheckpointError, match=r"cut.safetensors: tensor w: data_offsets \[0, 16\]"):
        SafetensorsFile(tmp_path / "cut.safetensors")


def test_unsupported_dtype_names_the_tensor(tmp_path):
    header = {"w": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}
    _raw_file(tmp_path / "f8.safetensors", header, b"\0")
    with pytest.raises(CheckpointError, match=r"tensor w: unsupported dtype F8_E4M3"):
        SafetensorsFile(tmp_path / "f8.safetensors")
