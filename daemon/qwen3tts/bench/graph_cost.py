"""What one inference of a bundle graph costs: weight bytes read and FLOPs, counted from the IR.

Weight bytes: every constant subgraph (a weight and its int8 decompression: Convert, Subtract,
Multiply) is read once per consumer that computes with it, so the code predictor's 5 layers, unrolled
15 times in one graph, count 15x and each of its lm heads once. A Gather reads only the rows it picks
and counts as nothing. Bytes are the stored precision (int8 + scales, f16, f32).

FLOPs: 2 per multiply-add of MatMul, Convolution, GroupConvolution, ConvolutionBackpropData and
ScaledDotProductAttention nodes with static shapes; a dynamic dimension counts as 1, so the talker's
count is per token and the code predictor's per batch row. The talker's attention has a dynamic
context and is added from the spec (`attention_flops`).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass
from pathlib import Path

import openvino as ov

from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs.codec import CODES

COMPUTE_OPS = (
    "MatMul",
    "Convolution",
    "GroupConvolution",
    "ConvolutionBackpropData",
    "ScaledDotProductAttention",
)
NOT_CONSTANT = ("Parameter", "ReadValue")


@dataclass(frozen=True)
class GraphCost:
    weight_bytes_stored: int  # all constants in the graph
    weight_bytes_read: int  # per inference (see the module docstring)
    flops: int  # per inference, dynamic dims counted as 1
    weight_bytes_footprint: int = 0  # the distinct constants read per inference, each once


def _key(node: ov.Node) -> int:
    """Python wrappers of one node differ from call to call; the instance id does not."""
    return node.get_instance_id()


def _dims(shape: ov.PartialShape) -> list[int]:
    return [d.get_length() if d.is_static else 1 for d in shape]


def _constant_derived(model: ov.Model) -> set[int]:
    derived: set[int] = set()
    for node in model.get_ordered_ops():  # topological: inputs come first
        kind = node.get_type_name()
        inputs = [port.get_source_output().get_node() for port in node.inputs()]
        if kind == "Constant" or (
            inputs and kind not in NOT_CONSTANT and all(_key(i) in derived for i in inputs)
        ):
            derived.add(_key(node))
    return derived


def _closure_bytes(node: ov.Node, derived: set[int], memo: dict[int, frozenset]) -> frozenset:
    """The constants (as (id, bytes)) a constant-derived node is computed from."""
    key = _key(node)
    if key not in memo:
        if node.get_type_name() == "Constant":
            memo[key] = frozenset({(key, node.get_byte_size())})
        else:
            found: set = set()
            for port in node.inputs():
                found |= _closure_bytes(port.get_source_output().get_node(), derived, memo)
            memo[key] = frozenset(found)
    return memo[key]


def weight_bytes(model: ov.Model) -> tuple[int, int, int]:
    """(stored, read per inference, footprint) bytes of the graph's constants: the footprint counts each
    constant read once however often it is read (the buffer a stage streams over and over)."""
    derived = _constant_derived(model)
    memo: dict[int, frozenset] = {}
    stored = sum(op.get_byte_size() for op in model.get_ordered_ops() if op.get_type_name() == "Constant")
    read = 0
    touched: set = set()
    for node in model.get_ordered_ops():
        if _key(node) in derived:
            continue
        for index, port in enumerate(node.inputs()):
            source = port.get_source_output().get_node()
            if _key(source) not in derived or (node.get_type_name() == "Gather" and index == 0):
                continue
            closure = _closure_bytes(source, derived, memo)
            read += sum(size for _, size in closure)
            touched |= closure
    return stored, read, sum(size for _, size in touched)


def node_flops(node: ov.Node) -> int:
    kind = node.get_type_name()
    out = _dims(node.get_output_partial_shape(0))
    if kind == "MatMul":
        a = _dims(node.get_input_partial_shape(0))
        transpose_a = node.get_attributes().get("transpose_a", False)
        k = a[-2] if transpose_a and len(a) > 1 else a[-1]
        return 2 * math.prod(out) * k
    if kind in ("Convolution", "GroupConvolution"):
        w = _dims(node.get_input_partial_shape(1))
        per_output = math.prod(w[2:]) if kind == "GroupConvolution" else math.prod(w[1:])
        return 2 * math.prod(out) * per_output
    if kind == "ConvolutionBackpropData":
        x = _dims(node.get_input_partial_shape(0))
        w = _dims(node.get_input_partial_shape(1))  # [C_in, C_out, k...]
        return 2 * math.prod(x) * math.prod(w[1:])
    if kind == "ScaledDotProductAttention":
        q = node.get_input_partial_shape(0)
        k = node.get_input_partial_shape(1)
        if not (q.is_static and k.is_static):
            return 0  # dynamic context (the talker): counted from the spec instead
        q_dims, k_dims = _dims(q), _dims(k)
        return 4 * math.prod(q_dims[:-1]) * k_dims[-2] * q_dims[-1]
    return 0


def graph_cost(model: ov.Model) -> GraphCost:
    stored, read, footprint = weight_bytes(model)
    flops = sum(node_flops(op) for op in model.get_ordered_ops() if op.get_type_name() in COMPUTE_OPS)
    return GraphCost(stored, read, flops, footprint)


def read_graph_cost(xml: Path, core: ov.Core | None = None) -> GraphCost:
    return graph_cost((core or ov.Core()).read_model(xml))


def codec_chunk_costs(bundle_dir: Path, manifest, core: ov.Core | None = None) -> dict[int, GraphCost]:
    """Chunk size -> cost of one codec chunk (split layout: the frame part at that size + its sample part)."""
    core = core or ov.Core()
    frames_xml, chunk_xmls = layout.codec_graph_files(manifest)
    costs = {}
    for size, xml in chunk_xmls.items():
        cost = read_graph_cost(bundle_dir / xml, core)
        if frames_xml:
            frames = core.read_model(bundle_dir / frames_xml)
            frames.reshape({CODES: ov.PartialShape([1, size, manifest.spec.codec.num_quantizers])})
            cost = GraphCost(
                *(a + b for a, b in zip(astuple(cost), astuple(graph_cost(frames)), strict=True))
            )
        costs[size] = cost
    return costs


def attention_flops(num_heads: int, head_dim: int, num_layers: int, context: int) -> int:
    """QK^T and AV for one new token against `context` cached positions."""
    return 4 * num_heads * head_dim * context * num_layers
