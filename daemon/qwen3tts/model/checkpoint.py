"""A Qwen3-TTS 12 Hz checkpoint directory in the Hugging Face release layout, opened without torch.

    config.json, generation_config.json, model.safetensors (bf16), vocab.json, merges.txt, ...
    speech_tokenizer/{config.json, model.safetensors, preprocessor_config.json}

`load_checkpoint` parses the configs into a ModelSpec and memory-maps both weight files; every tensor
the spec implies is checked for presence and shape up front, so a bad download fails here with the
file and tensor named, not deep inside a graph builder.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qwen3tts.errors import CheckpointError
from qwen3tts.model.safetensors_io import SafetensorsFile
from qwen3tts.model.spec import CodecDecoderSpec, ModelSpec
from qwen3tts.model.spec_parse import CODEC_CONFIG, GENERATION_CONFIG, MODEL_CONFIG, parse_model_spec
from qwen3tts.model.tensor_layout import model_tensor_shapes

logger = logging.getLogger(__name__)

MODEL_WEIGHTS = "model.safetensors"
CODEC_WEIGHTS = "speech_tokenizer/model.safetensors"


@dataclass(frozen=True, eq=False)  # identity, not a tensor-by-tensor comparison of two checkpoints
class Checkpoint:
    """An opened checkpoint: its spec and lazily read, memory-mapped float32 weights."""

    path: Path
    spec: ModelSpec
    weights: SafetensorsFile  # model.safetensors: name -> float32 array, read on access
    codec_weights: SafetensorsFile  # speech_tokenizer/model.safetensors

    def file_sha256(self, relative: str | Path) -> str:
        """Hex sha256 of a file inside the checkpoint (e.g. "model.safetensors"), read in 1 MiB blocks."""
        path = self.path / relative
        digest = hashlib.sha256()
        try:
            with path.open("rb") as f:
                while block := f.read(1 << 20):
                    digest.update(block)
        except FileNotFoundError:
            raise CheckpointError(f"{path}: file missing") from None
        return digest.hexdigest()


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Open the checkpoint at `path`; raises CheckpointError naming the file (and tensor) on any problem."""
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"{root}: checkpoint directory missing")
    spec = parse_model_spec(
        read_json(root / MODEL_CONFIG),
        read_json(root / GENERATION_CONFIG),
        read_json(root / CODEC_CONFIG),
    )
    weights = SafetensorsFile(root / MODEL_WEIGHTS)
    check_shapes(weights, model_tensor_shapes(spec))
    codec_weights = SafetensorsFile(root / CODEC_WEIGHTS)
    check_shapes(codec_weights, codec_decoder_shapes(spec.codec))
    logger.info(
        "checkpoint %s: %s %s, %d + %d tensors",
        root,
        spec.variant,
        spec.size,
        len(weights),
        len(codec_weights),
    )
    return Checkpoint(root, spec, weights, codec_weights)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from None


def check_shapes(weights: SafetensorsFile, expected: Mapping[str, tuple[int, ...] | None]) -> None:
    """Every expected tensor must exist; a shape of None means "present, any shape"."""
    missing = [name for name in expected if name not in weights]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise CheckpointError(f"{weights.path}: tensor {missing[0]} missing{more}")
    for name, shape in expected.items():
        actual = weights.shape(name)
        if shape is not None and actual != tuple(shape):
            raise CheckpointError(
                f"{weights.path}: tensor {name} has shape {list(actual)}, expected {list(shape)}"
            )
    unexpected = len(weights) - len(expected)
    if unexpected > 0:
        logger.debug("%s: %d tensors not used by the spec", weights.path, unexpected)


def codec_decoder_shapes(codec: CodecDecoderSpec) -> dict[str, tuple[int, ...] | None]:
    """The codec tensors this reader vouches for: the split-RVQ codebooks and projections, pre_conv.

    The decoder's deeper layout (pre_transformer, upsample, decoder blocks) belongs to the codec
    graph builder; here only its first tensors are required to exist, which is enough to reject a
    codec-less or encoder-only download early.
    """
    half = codec.codebook_dim // 2  # each RVQ half quantizes in codebook_dim / 2
    shapes: dict[str, tuple[int, ...] | None] = {}
    groups = {
        "rvq_first": codec.num_semantic_quantizers,
        "rvq_rest": codec.num_quantizers - codec.num_semantic_quantizers,
    }
    for group, count in groups.items():
        prefix = f"decoder.quantizer.{group}"
        shapes[f"{prefix}.output_proj.weight"] = (codec.codebook_dim, half, 1)
        for i in range(count):
            shapes[f"{prefix}.vq.layers.{i}._codebook.embedding_sum"] = (codec.codebook_size, half)
            shapes[f"{prefix}.vq.layers.{i}._codebook.cluster_usage"] = (codec.codebook_size,)
    shapes["decoder.pre_conv.conv.weight"] = (codec.latent_dim, codec.codebook_dim, 3)
    shapes["decoder.pre_conv.conv.bias"] = (codec.latent_dim,)
    shapes["decoder.pre_transformer.input_proj.weight"] = (codec.hidden_size, codec.latent_dim)
    shapes["decoder.pre_transformer.output_proj.weight"] = (codec.latent_dim, codec.hidden_size)
    shapes["decoder.decoder.0.conv.weight"] = (codec.decoder_dim, codec.latent_dim, 7)
    return shapes
