"""The state a codec chunk graph carries from one chunk to the next (codec.py says why it streams exactly).

`state_layout` names every carried tensor in a fixed order, the same for every chunk size, so a stream
may mix chunk sizes; `State` hands those tensors to the graph builder as `past.<name>` inputs and
collects their `present.<name>` successors (or zero constants for the one-shot full decode).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.codec_transformer import POSITION
from qwen3tts.model.graphs.layers import Output, named_parameter, named_result
from qwen3tts.model.spec import CodecDecoderSpec

PAST_PREFIX = "past."  # chunk input `past.<state name>`
PRESENT_PREFIX = "present."  # chunk output `present.<state name>`


@dataclass(frozen=True)
class StateTensor:
    """One carried tensor: `name` (upstream module path), shape and dtype; zeros start a stream."""

    name: str
    shape: tuple[int, ...]
    dtype: type = np.float32


def decoder_dims(spec: CodecDecoderSpec) -> list[tuple[int, int]]:
    """(in_dim, out_dim) of each DecoderBlock: channels halve per block."""
    return [(spec.decoder_dim >> b, spec.decoder_dim >> (b + 1)) for b in range(len(spec.upsample_rates))]


def state_layout(spec: CodecDecoderSpec) -> tuple[StateTensor, ...]:
    """Every state tensor of the chunk graph, in a fixed order; shapes do not depend on chunk size."""
    window = spec.sliding_window - 1
    states = [
        StateTensor(POSITION, (1,), np.int64),
        StateTensor("decoder.pre_conv", (1, spec.codebook_dim, 2)),
    ]
    for i in range(spec.num_hidden_layers):
        for kind in ("key", "value"):
            shape = (1, spec.num_key_value_heads, window, spec.head_dim)
            states.append(StateTensor(f"decoder.pre_transformer.layers.{i}.self_attn.{kind}", shape))
    for j in range(len(spec.upsampling_ratios)):
        states.append(StateTensor(f"decoder.upsample.{j}.1.dwconv", (1, spec.latent_dim, 6)))
    states.append(StateTensor("decoder.decoder.0", (1, spec.latent_dim, 6)))
    for b, (in_dim, out_dim) in enumerate(decoder_dims(spec)):
        states.append(StateTensor(f"decoder.decoder.{b + 1}.block.1", (1, in_dim, 1)))
        for u, dilation in enumerate((1, 3, 9)):
            states.append(
                StateTensor(f"decoder.decoder.{b + 1}.block.{u + 2}.conv1", (1, out_dim, 6 * dilation))
            )
    out_conv = len(spec.upsample_rates) + 2
    states.append(
        StateTensor(f"decoder.decoder.{out_conv}", (1, spec.decoder_dim >> len(spec.upsample_rates), 6))
    )
    return tuple(states)


def initial_state(spec: CodecDecoderSpec) -> dict[str, np.ndarray]:
    """The state of a fresh stream: all zeros (= the official zero left padding, position 0)."""
    return {s.name: np.zeros(s.shape, s.dtype) for s in state_layout(spec)}


class State:
    """Hands out the carried tensors while the graph is built and collects their successors.

    Streaming: `past.<name>` Parameters and `present.<name>` Results, with `batch` streams in the
    leading axis where the layout has 1. Full decode: zero Constants of one stream, and
    the successors are dropped.
    """

    def __init__(self, spec: CodecDecoderSpec, streaming: bool, batch: int = 1):
        self.layout = {s.name: s for s in state_layout(spec)}
        self.streaming = streaming
        self.batch = batch
        self.inputs: dict[str, ov.Node] = {}
        self.results: list[ov.Node] = []

    @property
    def parameters(self) -> list[ov.Node]:
        return list(self.inputs.values()) if self.streaming else []

    def read(self, name: str) -> Output:
        if name not in self.inputs:
            s = self.layout[name]
            if self.streaming:
                kind = ov.Type.i64 if s.dtype == np.int64 else ov.Type.f32
                shape = [self.batch, *s.shape[1:]]  # the layout's leading 1 is the stream axis
                self.inputs[name] = named_parameter(shape, kind, PAST_PREFIX + name)
            else:
                self.inputs[name] = ops.constant(np.zeros(s.shape, s.dtype))
        return self.inputs[name]

    def write(self, name: str, value: Output) -> None:
        if self.streaming:
            self.results.append(named_result(value, PRESENT_PREFIX + name))
