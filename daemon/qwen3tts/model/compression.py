"""Weight compression of the built graphs: NNCF INT8/INT4 on the MatMuls, f16 embedding tables.

The precision of each component comes from the build's policy (model/build.py PRECISION_POLICIES);
this file knows how to apply one precision to one graph and what it ended up as.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.errors import BundleError

Reporter = Callable[[str], None]


def save_graph(model: ov.Model, path: Path, precision: str, report: Reporter | None = None) -> str:
    """Compress (int8 / int4_{sym,asym}_g{N}) and serialise; f16 halves the file, f32 keeps parity exact.

    Returns the precision the graph got: an INT4 group that does not divide a matrix's input channels
    (the tiny checkpoints' 32-96) falls back to a smaller group there, and the label says which.
    """
    if precision.startswith("int"):
        model = gather_tables_to_f16(compress_weights(model, precision))
        precision = _int4_label(model, precision, path.stem, report)
    ov.save_model(model, path, compress_to_fp16=(precision != "f32"))
    return precision


def _int4_label(model: ov.Model, precision: str, name: str, report: Reporter | None) -> str:
    """`precision`, or with the fallback group sizes nncf chose appended, e.g. int4_sym_g128 (g32 x 20)."""
    wanted = re.search(r"_g(\d+)", precision)
    if not wanted:
        return precision
    sizes = int4_group_sizes(model)
    other = {size: count for size, count in sorted(sizes.items()) if size != int(wanted.group(1))}
    if not other:
        return precision
    fallback = ", ".join(f"g{size} x {count}" for size, count in other.items())
    if report:
        report(
            f"{name}: INT4 group {wanted.group(1)} does not divide every matrix's input channels; "
            f"smaller groups there: {fallback} (of {sum(sizes.values())} INT4 matrices)"
        )
    return f"{precision} ({fallback})"


def int4_group_sizes(model: ov.Model) -> dict[int, int]:
    """{group size: number of matrices} over the model's INT4 weights (Constant [N, K/G, G] u4/i4)."""
    sizes: dict[int, int] = {}
    for node in model.get_ordered_ops():
        four_bit = node.get_output_element_type(0) in (ov.Type.u4, ov.Type.i4)
        if node.get_type_name() != "Constant" or not four_bit:
            continue
        shape = node.get_output_shape(0)
        if len(shape) == 3:
            sizes[int(shape[2])] = sizes.get(int(shape[2]), 0) + 1
    return sizes


def compress_weights(model: ov.Model, precision: str) -> ov.Model:
    """NNCF data-free weight compression of every MatMul weight; Gathers (embedding tables) are left alone.

    `int8` is INT8_SYM per output channel, `int8_asym` the same with a zero point. `int4_sym_g128` /
    `int4_asym_g64` ... are INT4 with one scale (and zero point) per group of N input channels, on every
    MatMul (`ratio=1.0`, `all_layers`: the lm_heads too, which NNCF would otherwise keep in INT8); where N
    does not divide a matrix's input channels, nncf takes the largest power of two >= 32 that does
    (GroupSizeFallbackMode.ADJUST; save_graph names them), and INT8 below that.
    A suffix keeps some matrices in INT8_SYM (mixed precision): `+heads8` the output heads (lm_head,
    codec_head), `+ends8` those and the first and last decoder layers, `+attn8` the heads and every
    attention projection (INT4 on the MLPs only).
    """
    import nncf

    _make_names_unique(model)
    ignored = nncf.IgnoredScope(types=["Gather"], validate=False)
    int8_modes = {"int8": nncf.CompressWeightsMode.INT8_SYM, "int8_asym": nncf.CompressWeightsMode.INT8_ASYM}
    if precision in int8_modes:
        return nncf.compress_weights(model, mode=int8_modes[precision], ignored_scope=ignored)
    base, _, keep = precision.partition("+")
    kind, _, group = base.partition("_g")
    modes = {"int4_sym": nncf.CompressWeightsMode.INT4_SYM, "int4_asym": nncf.CompressWeightsMode.INT4_ASYM}
    if kind not in modes or not group.isdigit() or keep not in ("", "heads8", "ends8", "attn8"):
        raise BundleError(f"unknown weight precision {precision!r}")
    kept = _int8_matmuls(model, keep)
    int4_ignored = nncf.IgnoredScope(names=kept, types=["Gather"], validate=False)
    # a group that does not divide a matrix's input channels: the largest power of two that does (>= 32)
    adjust = nncf.AdvancedCompressionParameters(group_size_fallback_mode=nncf.GroupSizeFallbackMode.ADJUST)
    model = nncf.compress_weights(
        model,
        mode=modes[kind],
        group_size=int(group),
        ratio=1.0,
        all_layers=True,
        ignored_scope=int4_ignored,
        advanced_parameters=adjust,
    )
    if kept:  # the second pass sees only the matrices the first left in float
        model = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_SYM, ignored_scope=ignored)
    return model


def _int8_matmuls(model: ov.Model, keep: str) -> list[str]:
    """Names of the MatMuls whose weight a mixed policy keeps in INT8 (see compress_weights; '' = none)."""
    if not keep:
        return []
    weights = {}  # MatMul name -> its weight Constant's name (the release key, see layers.weight)
    for node in model.get_ordered_ops():
        if node.get_type_name() == "MatMul":
            source = node.input_value(1).get_node()
            if source.get_type_name() == "Constant":
                weights[node.get_friendly_name()] = source.get_friendly_name()
    layer_ids = [int(m.group(1)) for w in weights.values() if (m := re.search(r"\.layers\.(\d+)\.", w))]
    pattern = r"(lm_head|codec_head)\."
    if keep == "ends8" and layer_ids:
        pattern += rf"|\.layers\.(0|{max(layer_ids)})\."
    if keep == "attn8":
        pattern += r"|\.self_attn\."
    return [name for name, weight in weights.items() if re.search(pattern, weight)]


def gather_tables_to_f16(model: ov.Model) -> ov.Model:
    """Store the f32 embedding tables (Constants read only by Gathers) as f16 + Convert, in place.

    After NNCF, save_model's compress_to_fp16 leaves them f32 (the code predictor's 16 tables: 132 MiB).
    The CPU plugin gathers straight from the f16 table and converts the rows it took, so the table
    stays f16 in the mapped file: half the pages a long run touches, one rounding like the host's
    f16 tables (docs/benchmarks.md, issue 16 memory).
    """
    import openvino.opset13 as ops

    for const in model.get_ordered_ops():
        if const.get_type_name() != "Constant" or const.get_output_element_type(0) != ov.Type.f32:
            continue
        readers = list(const.output(0).get_target_inputs())
        if not readers or not all(
            r.get_node().get_type_name() == "Gather" and r.get_index() == 0 for r in readers
        ):
            continue
        table = ops.constant(const.get_data().astype(np.float16))  # (rows, hidden)
        table.set_friendly_name(const.get_friendly_name())
        widened = ops.convert(table, ov.Type.f32)
        for reader in readers:
            reader.replace_source_output(widened.output(0))
    model.validate_nodes_and_infer_types()
    return model


def _make_names_unique(model: ov.Model) -> None:
    """nncf addresses nodes by friendly name; builders may reuse a weight's name for several nodes."""
    seen: dict[str, int] = {}
    for node in model.get_ordered_ops():
        name = node.get_friendly_name()
        count = seen.get(name, 0)
        seen[name] = count + 1
        if count:
            node.set_friendly_name(f"{name}.{count}")
