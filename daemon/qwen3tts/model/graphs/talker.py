"""The talker decoder as a stateful OpenVINO graph that `paged_attention_transformation` converts.

Mirrors `Qwen3TTSTalkerModel` + `Qwen3TTSTalkerForConditionalGeneration.codec_head` of
`qwen_tts/core/models/modeling_qwen3_tts.py`. Embeddings are computed outside the graph (the input is
a sum of a text-track and a codec-track vector), so the graph starts at `inputs_embeds`.

The interleaved MRoPE of the release gets identical positions on all three axes, which makes it exactly
1D rotate-half RoPE; the graph therefore takes 1D `position_ids`.

Graph contract (names are constants below):
- inputs: `inputs_embeds` [B, S, hidden] f32, `attention_mask` [B, T] i64 (T = past + S),
  `position_ids` [B, S] i64, `beam_idx` [B] i32.
- outputs: `logits` [B, S, vocab] (codec_head on every position), `last_hidden_state` [B, S, hidden]
  (after the final norm; the code predictor's input).
- per layer and K/V: ReadValue(initializer) -> Gather v8(beam_idx) -> Concat -> Assign / SDPA v13 with an
  explicit float mask, GQA through Unsqueeze -> Broadcast -> Reshape.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset6 as ops6
import openvino.opset13 as ops
from openvino._offline_transformations import paged_attention_transformation
from openvino.op.util import Variable, VariableInfo

from qwen3tts.model.graphs import layers, transformer
from qwen3tts.model.spec import TalkerSpec

INPUTS_EMBEDS = "inputs_embeds"
ATTENTION_MASK = "attention_mask"
POSITION_IDS = "position_ids"
BEAM_IDX = "beam_idx"
LOGITS = "logits"
LAST_HIDDEN_STATE = "last_hidden_state"

PREFIX = "talker.model"
CODEC_HEAD = "talker.codec_head"


class StatefulKVCache:
    """KVUpdate that keeps K/V in graph state the way optimum-intel's stateful export does.

    The ReadValue needs an initializer input and a Gather v8 on `beam_idx` after it, otherwise
    paged_attention_transformation does not match and fails with a misleading "undeclared parameters"
    error. `sinks` collects the Assign ops for ov.Model.
    """

    def __init__(self, batch: ov.Output, beam_idx: ov.Output, dims: transformer.AttentionDims):
        self.batch = batch  # [1] i64
        self.beam_idx = beam_idx
        self.dims = dims
        self.sinks: list[ov.Node] = []

    def __call__(self, layer_index: int, k: ov.Output, v: ov.Output) -> tuple[ov.Node, ov.Node]:
        return self._extend(layer_index, "key", k), self._extend(layer_index, "value", v)

    def _extend(self, layer_index: int, kind: str, new: ov.Output) -> ov.Node:
        info = VariableInfo()
        info.variable_id = f"past_key_values.{layer_index}.{kind}present.{layer_index}.{kind}"
        info.data_type = ov.Type.f32
        info.data_shape = ov.PartialShape([-1, self.dims.num_kv_heads, -1, self.dims.head_dim])
        variable = Variable(info)
        empty_shape = ops.concat([self.batch, layers.i64([self.dims.num_kv_heads, 0, self.dims.head_dim])], 0)
        initial = ops.broadcast(layers.const(0.0), empty_shape)  # [B, kvh, 0, D]
        past = ops.gather(ops6.read_value(initial, variable), self.beam_idx, layers.i64(0))  # [B, kvh, P, D]
        present = ops.concat([past, new], 2)  # [B, kvh, P+S, D]
        self.sinks.append(ops6.assign(present, variable))
        return present


def build_talker(spec: TalkerSpec, weights: Mapping[str, np.ndarray]) -> ov.Model:
    """Stateful talker graph from release-named weights (`talker.model.layers.{i}.*`, `talker.codec_head`)."""
    dims = transformer.AttentionDims.from_spec(spec)
    inputs_embeds = layers.named_parameter([-1, -1, spec.hidden_size], np.float32, INPUTS_EMBEDS)
    attention_mask = layers.named_parameter([-1, -1], np.int64, ATTENTION_MASK)
    position_ids = layers.named_parameter([-1, -1], np.int64, POSITION_IDS)
    beam_idx = layers.named_parameter([-1], np.int32, BEAM_IDX)

    embeds_shape = ops.shape_of(inputs_embeds, "i64")  # [3]: B, S, hidden
    batch = layers.dim(embeds_shape, 0)  # [1]
    query_len = ops.gather(embeds_shape, layers.i64(1), layers.i64(0))  # S, 0-d
    mask = transformer.float_attention_mask(attention_mask, query_len)  # [B, 1, S, T]
    rope = transformer.rope_tables(position_ids, spec.head_dim, spec.rope_theta)  # 2 x [B, 1, S, D]
    cache = StatefulKVCache(batch, beam_idx, dims)

    x = inputs_embeds
    for i in range(spec.num_hidden_layers):
        x = transformer.decoder_layer(x, weights, f"{PREFIX}.layers.{i}", dims, rope, mask, cache, i)
    norm_key = f"{PREFIX}.norm.weight"
    hidden = layers.rms_norm(x, weights[norm_key], spec.rms_norm_eps, name=norm_key)  # [B, S, hidden]
    logits = layers.linear(hidden, weights, CODEC_HEAD)  # [B, S, vocab]

    results = [layers.named_result(logits, LOGITS), layers.named_result(hidden, LAST_HIDDEN_STATE)]
    parameters = [inputs_embeds, attention_mask, position_ids, beam_idx]
    return ov.Model(results, cache.sinks, parameters, "qwen3_tts_talker")


def to_paged(model: ov.Model) -> ov.Model:
    """A PagedAttention copy of a stateful talker (the input model is left untouched).

    Run this at every start: a saved PA IR does not load back. The result takes
    inputs_embeds [T, hidden], position_ids [T], past_lens, subsequence_begins, block_indices,
    block_indices_begins, max_context_len and key_cache.{i} / value_cache.{i}; see runtime/paged_talker.py.
    """
    paged = model.clone()
    paged_attention_transformation(paged)  # in place
    return paged
