"""The code predictor's tensors, found in the bundle's graph as OpenVINO read it (memory-mapped).

The fused native frame (native/src/predictor.hpp) reads the INT8 or INT4 matrices straight from the
Constants of the code-predictor IR: `get_data()` of a Constant read from a file is a view of the mapped
`.bin`, so nothing is copied. INT8 is nncf's INT8_SYM (i8 [N, K], a scale per row); INT4 its INT4_SYM
(i4 [N, K / G, G], two channels a byte, a scale per row and group of G, G in INT4_GROUPS); a bundle may mix
them. The matrices and tables are found by the release names the graph builder gave them
(model/graphs/code_predictor.py); the RMSNorm gains, which it leaves unnamed, by the graph's structure:
the gain of the norm that feeds a named matrix's MatMul. A bundle whose tensors are not what the native
path reads (f16/f32 or asymmetric weights, an INT4 group the kernels do not take, an unknown layout)
raises UnreadableTensors naming the first one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import openvino as ov

from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.model.graphs.transformer import inverse_frequencies
from qwen3tts.model.spec import CodePredictorSpec


class UnreadableTensors(ValueError):
    """The graph's tensors are not ones the native frame can read (the message says which)."""


# INT4 group sizes the native kernels take (native/src/kernels.hpp: a group must divide the activations'
# group of 128): 128 on the real checkpoints, 32 and 64 where nncf fell back on the tiny ones.
INT4_GROUPS = (32, 64, 128)


@dataclass(frozen=True)
class Int8Weights:
    data: np.ndarray  # [rows, cols] int8, a view of the mapped file
    scale: np.ndarray  # [rows] f32 (widened from the bundle's f16)


@dataclass(frozen=True)
class Int4Weights:
    data: np.ndarray  # [rows, cols / 2] uint8, a view of the mapped file: channel 2i in byte i's low nibble
    scale: np.ndarray  # [rows, cols / group] f32 (widened from the bundle's f16)
    group: int  # input channels per scale, one of INT4_GROUPS

    @property
    def cols(self) -> int:
        return self.data.shape[1] * 2


Weights = Int8Weights | Int4Weights


@dataclass
class PredictorTensors:
    layers: list[dict[str, Weights]] = field(default_factory=list)  # qkv, o, gate_up, down
    norms: list[dict[str, np.ndarray]] = field(default_factory=list)  # input, post, q, k gains (f32)
    heads: list[Weights] = field(default_factory=list)
    final_norm: np.ndarray | None = None
    inverse_frequencies: np.ndarray | None = None
    projection: Weights | None = None
    projection_bias: np.ndarray | None = None
    talker_embedding: np.ndarray | None = None  # [talker vocab, input] f16
    code_embeddings: list[np.ndarray] = field(default_factory=list)  # [vocab, input] f16 each

    def mapped_bytes(self) -> int:
        """Bytes of the bundle's file the frame reads in place: the INT8 / INT4 matrices, the f16 tables."""
        matrices = [m for layer in self.layers for m in layer.values()] + self.heads
        matrices += [self.projection] if self.projection is not None else []
        tables = [self.talker_embedding, *self.code_embeddings]
        return sum(m.data.nbytes for m in matrices) + sum(t.nbytes for t in tables if t is not None)


MATRICES = {"qkv": "self_attn.qkv_proj", "o": "self_attn.o_proj", "gate_up": "mlp.gate_up_proj"}
MATRICES["down"] = "mlp.down_proj"


def read_tensors(model: ov.Model, spec: CodePredictorSpec) -> PredictorTensors:
    """Every tensor of the frame from `model` (the code predictor IR; keep it alive while they are used)."""
    constants = {n.get_friendly_name(): n for n in model.get_ordered_ops() if n.get_type_name() == "Constant"}
    found = PredictorTensors()
    for i in range(spec.num_hidden_layers):
        prefix = f"{cp.PREFIX}.model.layers.{i}"
        matrices = {key: _weights(constants, f"{prefix}.{name}.weight") for key, name in MATRICES.items()}
        found.layers.append(matrices)
        q_gain, k_gain = _head_norm_gains(constants[f"{prefix}.self_attn.qkv_proj.weight"], spec)
        found.norms.append(
            {
                "input": _feeding_gain(constants[f"{prefix}.self_attn.qkv_proj.weight"], spec.hidden_size),
                "post": _feeding_gain(constants[f"{prefix}.mlp.gate_up_proj.weight"], spec.hidden_size),
                "q": q_gain,
                "k": k_gain,
            }
        )
    steps = spec.num_code_groups - 1
    found.heads = [_weights(constants, f"{cp.PREFIX}.lm_head.{j}.weight") for j in range(steps)]
    found.final_norm = _feeding_gain(constants[f"{cp.PREFIX}.lm_head.0.weight"], spec.hidden_size)
    found.inverse_frequencies = inverse_frequencies(spec.head_dim, spec.rope_theta)
    if spec.has_input_projection:
        key = f"{cp.PREFIX}.small_to_mtp_projection"
        found.projection = _weights(constants, f"{key}.weight")
        found.projection_bias = _floats(constants, f"{key}.bias")
    found.talker_embedding = _f16(constants, cp.TALKER_CODEC_EMBEDDING)
    found.code_embeddings = [
        _f16(constants, f"{cp.PREFIX}.model.codec_embedding.{j}.weight") for j in range(steps)
    ]
    return found


def _constant(constants: dict[str, ov.Node], name: str) -> ov.Node:
    if name not in constants:
        raise UnreadableTensors(f"{name} is not a Constant of the graph")
    return constants[name]


def _weights(constants: dict[str, ov.Node], name: str) -> Weights:
    """The matrix `name`, INT4 if its Constant is i4, else INT8 (or UnreadableTensors saying why not)."""
    if _constant(constants, name).get_output_element_type(0) == ov.Type.i4:
        return _int4(constants, name)
    return _int8(constants, name)


def _int4(constants: dict[str, ov.Node], name: str) -> Int4Weights:
    node = _constant(constants, name)
    shape = [int(d) for d in node.get_output_shape(0)]
    if len(shape) != 3:
        raise UnreadableTensors(f"{name} is i4 {shape}, not INT4 [N, K / G, G]")
    rows, groups, group = shape
    if group not in INT4_GROUPS:
        raise UnreadableTensors(
            f"{name} is INT4 in groups of {group}; the native kernels take groups of "
            + ", ".join(map(str, INT4_GROUPS))
        )
    data = _packed_view(node.get_data(), rows, groups * group // 2, name)
    scale = _constant(constants, f"{name}/scale").get_data()
    if scale.size != rows * groups:
        raise UnreadableTensors(f"{name}/scale has {scale.size} values for {rows} rows x {groups} groups")
    scale = np.ascontiguousarray(scale.reshape(rows, groups), dtype=np.float32)
    return Int4Weights(data, scale, group)


def _packed_view(data: np.ndarray, rows: int, row_bytes: int, name: str) -> np.ndarray:
    """The i4 Constant's bytes as [rows, row_bytes] uint8, without a copy (the library keeps the pointer)."""
    if data.nbytes != rows * row_bytes or not data.flags.c_contiguous:
        raise UnreadableTensors(f"{name}: {data.nbytes} packed bytes for {rows} rows of {row_bytes}")
    return data.reshape(-1).view(np.uint8).reshape(rows, row_bytes)


def _int8(constants: dict[str, ov.Node], name: str) -> Int8Weights:
    node = _constant(constants, name)
    kind = node.get_output_element_type(0)
    if kind != ov.Type.i8 or len(node.get_output_shape(0)) != 2:
        raise UnreadableTensors(
            f"{name} is {kind.get_type_name()} {list(node.get_output_shape(0))}, not INT8 [N, K]"
        )
    data = node.get_data()
    scale = _constant(constants, f"{name}/scale").get_data()
    if scale.size != data.shape[0]:
        raise UnreadableTensors(f"{name}/scale has {scale.size} values for {data.shape[0]} rows")
    return Int8Weights(data, np.ascontiguousarray(scale.reshape(-1), dtype=np.float32))


def _f16(constants: dict[str, ov.Node], name: str) -> np.ndarray:
    node = _constant(constants, name)
    if node.get_output_element_type(0) != ov.Type.f16:
        raise UnreadableTensors(f"{name} is {node.get_output_element_type(0).get_type_name()}, not f16")
    return node.get_data()


def _floats(constants: dict[str, ov.Node], name: str) -> np.ndarray:
    return np.ascontiguousarray(_constant(constants, name).get_data(), dtype=np.float32).reshape(-1)


def _matmuls_of(weight: ov.Node) -> list[ov.Node]:
    """The MatMuls that multiply by `weight` (through its Convert / Multiply(scale) / Convert, and for
    INT4 the Reshape of the groups back to [N, K])."""
    found, frontier = [], [weight]
    for _ in range(5):
        frontier = [t.get_node() for n in frontier for t in n.output(0).get_target_inputs()]
        found += [n for n in frontier if n.get_type_name() == "MatMul"]
        frontier = [n for n in frontier if n.get_type_name() in ("Convert", "Multiply", "Reshape")]
    if not found:
        raise UnreadableTensors(f"{weight.get_friendly_name()} feeds no MatMul")
    return found


def _gain_of(node: ov.Node, size: int) -> np.ndarray | None:
    """The [size] Constant multiplying in `node` if it is an RMSNorm's last Multiply, else None."""
    if node.get_type_name() != "Multiply":
        return None
    for i in range(2):
        source = node.input_value(i).get_node()
        if source.get_type_name() == "Convert":
            source = source.input_value(0).get_node()
        if source.get_type_name() == "Constant" and tuple(source.get_output_shape(0)) == (size,):
            other = node.input_value(1 - i).get_node()
            if other.get_type_name() == "Divide":  # x / sqrt(mean(x^2) + eps): layers.rms_norm
                return np.asarray(source.get_data(), dtype=np.float32).copy()
    return None


def _feeding_gain(weight: ov.Node, size: int) -> np.ndarray:
    """The gain of the RMSNorm whose output is the activation of `weight`'s MatMul."""
    gain = _gain_of(_matmuls_of(weight)[0].input_value(0).get_node(), size)
    if gain is None:
        raise UnreadableTensors(f"no RMSNorm gain feeds {weight.get_friendly_name()}")
    return gain


def _head_norm_gains(qkv: ov.Node, spec: CodePredictorSpec) -> tuple[np.ndarray, np.ndarray]:
    """q_norm and k_norm gains: the per-head RMSNorms after the split of the stacked qkv product."""
    for matmul in _matmuls_of(qkv):
        splits = [t.get_node() for t in matmul.output(0).get_target_inputs()]
        split = next((n for n in splits if n.get_type_name() == "VariadicSplit"), None)
        if split is None:
            continue
        gains = [_first_gain_after(split.output(j), spec.head_dim) for j in (0, 1)]
        if gains[0] is not None and gains[1] is not None:
            return gains[0], gains[1]
    raise UnreadableTensors(f"no q/k RMSNorm gains after {qkv.get_friendly_name()}")


def _first_gain_after(output: ov.Output, size: int, depth: int = 6) -> np.ndarray | None:
    frontier = [t.get_node() for t in output.get_target_inputs()]
    for _ in range(depth):
        for node in frontier:
            gain = _gain_of(node, size)
            if gain is not None:
                return gain
        frontier = [
            t.get_node()
            for n in frontier
            for i in range(n.get_output_size())
            for t in n.output(i).get_target_inputs()
        ]
    return None
