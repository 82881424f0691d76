"""Shared OpenVINO opset primitives of every graph builder: constants, norms, linear layers, the SwiGLU MLP.

Mirrors `Qwen3TTSRMSNorm` and `Qwen3TTSTalkerTextMLP` of `qwen_tts/core/models/modeling_qwen3_tts.py`;
the transformer block built from them (RoPE, attention, the decoder layer) is transformer.py. Everything
here is pure: functions take graph outputs plus numpy weights and return graph outputs; nothing logs,
reads config or runs a model.

Conventions (stable API, every builder imports these):
- `weights` is a mapping from release key (`talker.model.layers.0.self_attn.q_proj.weight`) to a numpy
  array. Linear weights are `[out, in]` as in torch and are used with `transpose_b=True`, the layout NNCF
  weight compression expects. Each weight constant gets the release key as its friendly name.
- Activations are `[B, S, hidden]` f32; attention heads are `[B, heads, S, head_dim]`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

Output = ov.Output | ov.Node

F32_MIN = float(np.finfo(np.float32).min)


# ---------------------------------------------------------------- constants


def const(value, dtype=np.float32, name: str | None = None) -> ov.Node:
    """A Constant of `value` converted to `dtype`, optionally with a friendly name."""
    node = ops.constant(np.asarray(value, dtype=dtype))
    if name:
        node.set_friendly_name(name)
    return node


def i64(values) -> ov.Node:
    """An i64 Constant (axes, shapes, indices)."""
    return ops.constant(np.asarray(values, dtype=np.int64))


def weight(weights: Mapping[str, np.ndarray], key: str) -> ov.Node:
    """The f32 Constant for release key `key`, named after it (so it is findable after NNCF)."""
    return const(weights[key], np.float32, name=key)


def dim(shape: Output, index: int) -> ov.Node:
    """Element `index` of a ShapeOf output, as a 1-element i64 tensor (ready for Concat)."""
    return ops.gather(shape, i64([index]), i64(0))


# ---------------------------------------------------------------- elementwise blocks


def rms_norm(x: Output, gain: np.ndarray, eps: float, name: str | None = None) -> ov.Node:
    """x * rsqrt(mean(x^2, -1) + eps) * gain over the last axis (Qwen3TTSRMSNorm, f32 throughout)."""
    variance = ops.reduce_mean(ops.multiply(x, x), i64([-1]), keep_dims=True)
    normed = ops.divide(x, ops.sqrt(ops.add(variance, const(eps))))
    return ops.multiply(normed, const(gain, name=name))


def linear(x: Output, weights: Mapping[str, np.ndarray], prefix: str, bias: bool = False) -> ov.Node:
    """torch `nn.Linear` with weight `{prefix}.weight` [out, in] and optionally `{prefix}.bias` [out]."""
    y = ops.matmul(x, weight(weights, f"{prefix}.weight"), transpose_a=False, transpose_b=True)
    if bias:
        y = ops.add(y, weight(weights, f"{prefix}.bias"))
    return y


def stacked_weight(weights: Mapping[str, np.ndarray], keys: list[str], name: str) -> ov.Node:
    """One f32 Constant of the [out, in] matrices `keys` stacked along `out`, named `name`.

    One MatMul over the stacked matrix replaces one per matrix: at one or a few rows a decode step is a
    chain of GEMVs, and fewer, larger ones read the weights closer to the memory bandwidth. The math is
    unchanged (each output column is the same dot product), and NNCF's per-output-channel INT8 and
    per-group INT4 scales quantize every row exactly as they would in the separate matrices.
    """
    return const(np.concatenate([np.asarray(weights[k], np.float32) for k in keys], 0), name=name)


def qkv_weight(weights: Mapping[str, np.ndarray], prefix: str) -> ov.Node:
    """`{prefix}.{q,k,v}_proj.weight` stacked: [(heads + 2 * kv_heads) * head_dim, hidden]."""
    return stacked_weight(weights, [f"{prefix}.{p}_proj.weight" for p in "qkv"], f"{prefix}.qkv_proj.weight")


def gate_up_weight(weights: Mapping[str, np.ndarray], prefix: str) -> ov.Node:
    """`{prefix}.{gate,up}_proj.weight` stacked: [2 * intermediate, hidden]."""
    keys = [f"{prefix}.gate_proj.weight", f"{prefix}.up_proj.weight"]
    return stacked_weight(weights, keys, f"{prefix}.gate_up_proj.weight")


def matmul_t(x: Output, weight_node: Output) -> ov.Node:
    """x @ weight.T for a torch-layout [out, in] weight (the layout NNCF compresses per output row)."""
    return ops.matmul(x, weight_node, transpose_a=False, transpose_b=True)


def swiglu(h: Output, gate_up: Output, down: Output) -> ov.Node:
    """down(silu(gate(h)) * up(h)) with gate and up computed by one MatMul over `gate_up` (see above)."""
    gate, up = ops.split(matmul_t(h, gate_up), i64(-1), 2).outputs()  # 2 x [B, S, inter]
    return matmul_t(ops.multiply(ops.swish(gate), up), down)


def swiglu_mlp(x: Output, weights: Mapping[str, np.ndarray], prefix: str) -> ov.Node:
    """Qwen3TTSTalkerTextMLP with keys `{prefix}.{gate,up,down}_proj.weight`."""
    return swiglu(x, gate_up_weight(weights, prefix), weight(weights, f"{prefix}.down_proj.weight"))


def named_result(value: Output, name: str) -> ov.Node:
    """A Result whose output tensor is called `name` (inputs/outputs are addressed by name)."""
    result = ops.result(value)
    result.set_friendly_name(name)
    result.output(0).get_tensor().set_names({name})
    return result


def named_parameter(shape: list[int], dtype, name: str) -> ov.Node:
    """A Parameter whose friendly name and tensor name are both `name`."""
    param = ops.parameter(shape, dtype, name=name)
    param.output(0).get_tensor().set_names({name})
    return param
