"""Random Qwen3-TTS checkpoints in the exact Hugging Face release layout, written without torch.

`write_checkpoint(out, variant, shape, seed)` writes config.json, generation_config.json,
model.safetensors (bf16, the official state-dict names), the text tokenizer files and
speech_tokenizer/. "tiny" shapes take seconds and a few MB (tests); "0.6b"/"1.7b" have the real
sizes (benchmarks) and are streamed to disk tensor by tensor, chunk by chunk.

The values are not the default init: post_init leaves many tensors at zero or near identity and
std-0.02 weights shrink the signal layer by layer, so a random model would emit degenerate codes and
parity tests would pass vacuously. Instead every tensor is drawn variance-preserving, and each from
its own generator seeded by (seed, crc32(name)), so adding a tensor never reshuffles the others.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from qwen3tts.model.safetensors_io import write_safetensors_streamed
from qwen3tts.model.spec import VARIANTS
from qwen3tts.model.spec_parse import CODEC_CONFIG, GENERATION_CONFIG, MODEL_CONFIG, parse_model_spec
from qwen3tts.model.tensor_layout import model_tensor_shapes
from qwen3tts.model.tiny import codec as tiny_codec
from qwen3tts.model.tiny import vocab as tiny_vocab
from qwen3tts.model.tiny.config import GENERATION_CONFIG as GENERATION_VALUES
from qwen3tts.model.tiny.config import REAL_TEXT_VOCAB_SIZE, SHAPES, model_config

logger = logging.getLogger(__name__)

MODEL_WEIGHTS = "model.safetensors"
# Output heads are drawn this much wider than variance-preserving: logits with std ~4 put about one
# logit between the top two codes, far above fp32 graph-vs-reference rounding, so greedy codes are stable.
HEAD_GAIN = 4.0
_CHUNK_VALUES = 1 << 22  # 16 MiB of float32 per chunk keeps the real-size writes' memory flat


def write_checkpoint(
    out_dir: str | Path,
    variant: str = "custom_voice",
    shape: str = "tiny",
    seed: int = 0,
    configs_only: bool = False,
) -> Path:
    """Write a random checkpoint into `out_dir` (created if needed) and return its path.

    Same arguments give byte-identical files. `configs_only` skips both weight files (for tests
    that only look at the configs of the real-size shapes).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} unknown (expected one of {VARIANTS})")
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r} unknown (expected one of {SHAPES})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text_ids = dict(tiny_vocab.write_tokenizer_files(out))
    text_ids["assistant"] = json.loads((out / "vocab.json").read_text(encoding="utf-8"))["assistant"]
    config = model_config(variant, shape, text_ids, _text_vocab_size(shape))
    _write_json(out / MODEL_CONFIG, config)
    _write_json(out / GENERATION_CONFIG, GENERATION_VALUES)
    tiny_codec.write_speech_tokenizer(out / "speech_tokenizer", shape, seed, configs_only=configs_only)
    if not configs_only:
        spec = parse_model_spec(config, GENERATION_VALUES, json.loads((out / CODEC_CONFIG).read_text()))
        write_random_weights(out / MODEL_WEIGHTS, model_tensor_shapes(spec), seed)
    logger.info("wrote %s %s checkpoint (seed %d) to %s", variant, shape, seed, out)
    return out


def _text_vocab_size(shape: str) -> int:
    """Real shapes keep the release's 151936 rows; tiny ones just cover the tiny vocabulary."""
    if not shape.startswith("tiny"):
        return REAL_TEXT_VOCAB_SIZE
    return -(-tiny_vocab.VOCAB_SIZE // 64) * 64


def _write_json(path: Path, value: object) -> None:
    path.write_bytes((json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_random_weights(path: Path, shapes: dict[str, tuple[int, ...]], seed: int) -> None:
    """All `shapes` as bf16 safetensors, drawn by `random_chunks`."""
    layout = {name: (shape, "BF16") for name, shape in shapes.items()}
    write_safetensors_streamed(path, layout, lambda name: random_chunks(name, shapes[name], seed))


def random_chunks(name: str, shape: tuple[int, ...], seed: int) -> Iterator[np.ndarray]:
    """The values of one tensor, in row chunks of at most ~4M values, by what the tensor is:

    embeddings N(0, 1); biases N(0, 0.01); norm weights U(0.8, 1.2); Linear (out, in) and
    Conv1d (out, in, k) weights N(0, 1/fan_in), times HEAD_GAIN for the output heads.
    """
    rng = np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])
    rows = shape[0]
    row_size = int(np.prod(shape[1:], dtype=np.int64))
    rows_per_chunk = max(1, _CHUNK_VALUES // max(row_size, 1))
    for start in range(0, rows, rows_per_chunk):
        chunk_shape = (min(rows_per_chunk, rows - start), *shape[1:])
        if len(shape) == 1 and not name.endswith(".bias"):  # RMSNorm weights
            yield rng.random(chunk_shape, dtype=np.float32) * np.float32(0.4) + np.float32(0.8)
        else:
            yield rng.standard_normal(chunk_shape, dtype=np.float32) * np.float32(_std(name, shape))


def _std(name: str, shape: tuple[int, ...]) -> float:
    if name.endswith(".bias"):
        return 0.01
    if "embedding" in name:
        return 1.0
    fan_in = int(np.prod(shape[1:]))
    gain = HEAD_GAIN if name.startswith(("talker.codec_head.", "talker.code_predictor.lm_head.")) else 1.0
    return gain / fan_in**0.5
