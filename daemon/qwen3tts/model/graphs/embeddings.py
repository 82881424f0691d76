"""Talker input embeddings: the text track and the codec track.

Mirrors, in `qwen_tts/core/models/modeling_qwen3_tts.py`:
- text track: `talker.text_projection(talker.model.text_embedding(id))`, where text_projection is
  `Qwen3TTSTalkerResizeMLP`: linear_fc2(silu(linear_fc1(x))), both with bias;
- codec track: `talker.model.codec_embedding(id)`;
- next talker input of a frame (codec part):
  `codec_embedding(c0) + sum_j code_predictor.model.codec_embedding[j](c_{j+1})`, j = 0..14.

The text MLP works token by token, so the whole projected table can be computed once at build time
(`project_text_table`) and looked up at run time; `build_text_embedding` is the graph alternative that
keeps the raw 2048-wide table and runs the MLP per token.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs import layers

TEXT_TABLE = "talker.model.text_embedding.weight"
TEXT_PROJECTION = "talker.text_projection"
CODEC_TABLE = "talker.model.codec_embedding.weight"
PREDICTOR_TABLE = "talker.code_predictor.model.codec_embedding.{}.weight"

INPUT_IDS = "input_ids"
TEXT_EMBEDS = "text_embeds"
CODES = "codes"
FRAME_EMBEDS = "frame_embeds"


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def project_text_table(
    weights: Mapping[str, np.ndarray], dtype=np.float16, chunk_rows: int = 8192
) -> np.ndarray:
    """text_projection applied to every row of text_embedding: [text_vocab, talker_hidden] in `dtype`.

    Computed in f32, `chunk_rows` rows at a time, so peak extra memory is a few chunk-sized buffers
    beyond the source table and the result.
    """
    table = weights[TEXT_TABLE]  # [V, text_hidden]
    w1 = np.asarray(weights[f"{TEXT_PROJECTION}.linear_fc1.weight"], np.float32).T  # [text_hidden, inter]
    b1 = np.asarray(weights[f"{TEXT_PROJECTION}.linear_fc1.bias"], np.float32)
    w2 = np.asarray(weights[f"{TEXT_PROJECTION}.linear_fc2.weight"], np.float32).T  # [inter, hidden]
    b2 = np.asarray(weights[f"{TEXT_PROJECTION}.linear_fc2.bias"], np.float32)
    projected = np.empty((table.shape[0], w2.shape[1]), dtype=dtype)
    for start in range(0, table.shape[0], chunk_rows):
        rows = np.asarray(table[start : start + chunk_rows], np.float32)
        projected[start : start + chunk_rows] = _silu(rows @ w1 + b1) @ w2 + b2
    return projected


def build_text_embedding(weights: Mapping[str, np.ndarray]) -> ov.Model:
    """Graph `input_ids` [B, S] i64 -> `text_embeds` [B, S, talker_hidden]: lookup then the text MLP."""
    input_ids = layers.named_parameter([-1, -1], np.int64, INPUT_IDS)
    rows = ops.gather(layers.weight(weights, TEXT_TABLE), input_ids, layers.i64(0))  # [B, S, text_hidden]
    hidden = ops.swish(layers.linear(rows, weights, f"{TEXT_PROJECTION}.linear_fc1", bias=True))
    embeds = layers.linear(hidden, weights, f"{TEXT_PROJECTION}.linear_fc2", bias=True)  # [B, S, hidden]
    return ov.Model([layers.named_result(embeds, TEXT_EMBEDS)], [input_ids], "qwen3_tts_text_embedding")


def predictor_tables(weights: Mapping[str, np.ndarray], num_code_groups: int) -> np.ndarray:
    """The code predictor's codec tables stacked: [num_code_groups - 1, codebook, talker_hidden] f32."""
    return np.stack(
        [np.asarray(weights[PREDICTOR_TABLE.format(j)], np.float32) for j in range(num_code_groups - 1)]
    )


class CodecEmbedder:
    """Codec-track vectors in numpy: single codec ids and whole-frame sums (16 row gathers per frame)."""

    def __init__(self, codec_table: np.ndarray, predictor_tables: np.ndarray):
        self.codec_table = codec_table  # [codec_vocab, hidden]
        self.predictor_tables = predictor_tables  # [groups - 1, codebook, hidden]

    @classmethod
    def from_weights(cls, weights: Mapping[str, np.ndarray], num_code_groups: int) -> CodecEmbedder:
        codec_table = np.asarray(weights[CODEC_TABLE], np.float32)
        return cls(codec_table, predictor_tables(weights, num_code_groups))

    def codec(self, ids: np.ndarray) -> np.ndarray:
        """talker.model.codec_embedding(ids): [...] -> [..., hidden]."""
        return self.codec_table[ids]

    def frame(self, codes: np.ndarray) -> np.ndarray:
        """Next talker input (codec track) of frames `codes` [N, groups] -> [N, hidden]."""
        groups = np.arange(self.predictor_tables.shape[0])
        rest = self.predictor_tables[groups[None, :], codes[:, 1:]]  # [N, groups - 1, hidden]
        return self.codec_table[codes[:, 0]] + rest.sum(axis=1, dtype=np.float32)


def build_frame_embedding(weights: Mapping[str, np.ndarray], num_code_groups: int) -> ov.Model:
    """Graph `codes` [N, groups] i64 -> `frame_embeds` [N, hidden], the same sum as CodecEmbedder.frame.

    The predictor tables are flattened to one [(groups-1) * codebook, hidden] table so code j+1 of a
    frame reads row j * codebook + c_{j+1}: one Gather for all 15 groups.
    """
    stacked = predictor_tables(weights, num_code_groups)  # [G-1, C, H]
    groups, codebook, hidden = stacked.shape
    flat = layers.const(stacked.reshape(groups * codebook, hidden), name="code_predictor_codec_tables")
    codes = layers.named_parameter([-1, num_code_groups], np.int64, CODES)
    first = ops.gather(codes, layers.i64(0), layers.i64(1))  # [N]
    rest = ops.gather(codes, layers.i64(np.arange(1, num_code_groups)), layers.i64(1))  # [N, G-1]
    rows = ops.add(rest, layers.i64(np.arange(groups) * codebook))  # [N, G-1] flat row ids
    rest_sum = ops.reduce_sum(ops.gather(flat, rows, layers.i64(0)), layers.i64(1), keep_dims=False)  # [N, H]
    codec = ops.gather(layers.weight(weights, CODEC_TABLE), first, layers.i64(0))  # [N, H]
    embeds = ops.add(codec, rest_sum)
    return ov.Model([layers.named_result(embeds, FRAME_EMBEDS)], [codes], "qwen3_tts_frame_embedding")
