"""The talker's tensors, found in the bundle's stateful talker graph as OpenVINO read it (memory-mapped).

Same finder as tensors.py (the code predictor's): the INT8 matrices by the names model/graphs/talker.py
gave them, the RMSNorm gains by the graph's structure. The native talker (native/src/talker.hpp) keeps
pointers into the matrices, so the ov.Model must outlive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import openvino as ov

from qwen3tts.model.graphs import talker as graph
from qwen3tts.model.graphs.transformer import inverse_frequencies
from qwen3tts.model.spec import TalkerSpec
from qwen3tts.runtime.native_decode import tensors as finder
from qwen3tts.runtime.native_decode.tensors import Int8Weights


@dataclass
class TalkerTensors:
    layers: list[dict[str, Int8Weights]] = field(default_factory=list)  # qkv, o, gate_up, down
    norms: list[dict[str, np.ndarray]] = field(default_factory=list)  # input, post, q, k gains (f32)
    head: Int8Weights | None = None  # codec_head [vocab, hidden]
    final_norm: np.ndarray | None = None
    inverse_frequencies: np.ndarray | None = None


def read_talker_tensors(model: ov.Model, spec: TalkerSpec) -> TalkerTensors:
    """Every tensor of the talker step from `model` (the bundle's talker IR, not its paged copy);
    UnreadableTensors names the first one the native talker cannot read."""
    constants = {n.get_friendly_name(): n for n in model.get_ordered_ops() if n.get_type_name() == "Constant"}
    found = TalkerTensors()
    for i in range(spec.num_hidden_layers):
        prefix = f"{graph.PREFIX}.layers.{i}"
        names = {key: f"{prefix}.{name}.weight" for key, name in finder.MATRICES.items()}
        found.layers.append({key: finder._int8(constants, name) for key, name in names.items()})
        qkv = finder._constant(constants, names["qkv"])
        gate_up = finder._constant(constants, names["gate_up"])
        q_gain, k_gain = finder._head_norm_gains(qkv, spec)
        found.norms.append(
            {
                "input": finder._feeding_gain(qkv, spec.hidden_size),
                "post": finder._feeding_gain(gate_up, spec.hidden_size),
                "q": q_gain,
                "k": k_gain,
            }
        )
    head = f"{graph.CODEC_HEAD}.weight"
    found.head = finder._int8(constants, head)
    found.final_norm = finder._feeding_gain(finder._constant(constants, head), spec.hidden_size)
    found.inverse_frequencies = inverse_frequencies(spec.head_dim, spec.rope_theta)
    return found
