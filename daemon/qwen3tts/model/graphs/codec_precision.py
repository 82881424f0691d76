"""Mixed precision for the codec chunk graphs: chosen convolutions in bf16, everything else in f32.

The CPU plugin's `INFERENCE_PRECISION_HINT=bf16` lowers the whole decoder, and its decode keeps only
~19 dB SNR against f32 (docs/fidelity.md). Per-layer measurements show why: the error comes from the
convolutions themselves (SnakeBeta, norms and adds in f32 change nothing), and a rounding error made
early in the decoder is amplified by every later layer, while one made near the output is not
(docs/benchmarks.md, issue 16 codec precision). So a variant lowers only the LAST n convolutions.

The lowering is written into the graph, not asked of the plugin: the convolution reads its input
and its weights through Convert(bf16) and its output goes back through Convert(f32) before the bias.
Compiled with INFERENCE_PRECISION_HINT=f32, the CPU plugin keeps those explicit types and runs that
convolution with its bf16 kernels (AVX-512 BF16 / AMX); every other node stays f32. Keeping the
other nodes in f32 under a bf16 hint instead would not help (all convolutions in bf16 with
everything else f32 measured 19.6 dB, the bf16 hint 19.2 dB), and the plugin only honours its C++
DisablePrecisionConversion attribute (for f16), which rt_info written from Python is not. On a CPU
without bf16 the plugin turns bf16 types back into f32, so such a graph decodes exactly there.
"""

from __future__ import annotations

from collections.abc import Collection

import openvino as ov
import openvino.opset13 as ops

CONV_TYPES = ("Convolution",)  # the decoder's heavy ops; depthwise and MatMuls are a few % of the time
_WEIGHT_SUFFIX = ".conv.weight"


def conv_module(conv: ov.Node) -> str:
    """The checkpoint module of a convolution ("decoder.decoder.4.block.2.conv1"), from its weight's name.

    The builders name every conv weight `<module>.conv.weight`; weight compression and f16 storage
    put Converts (and a `_compressed` suffix) between it and the conv, so walk up to the Constant.
    """
    source = conv.input_value(1).get_node()
    while source.get_type_name() != "Constant":
        source = source.input_value(0).get_node()
    name = source.get_friendly_name()
    if _WEIGHT_SUFFIX not in name:
        raise ValueError(
            f"convolution {conv.get_friendly_name()}: weight {name!r} is not a <module>.conv.weight"
        )
    return name.split(_WEIGHT_SUFFIX)[0]


def conv_modules(model: ov.Model) -> list[str]:
    """Every convolution's module, in execution order (input side first)."""
    return [conv_module(n) for n in model.get_ordered_ops() if n.get_type_name() in CONV_TYPES]


def last_convs(model: ov.Model, count: int) -> list[str]:
    """The `count` convolutions nearest the output: the ones whose rounding the fewest layers amplify."""
    modules = conv_modules(model)
    return modules[len(modules) - count :] if count > 0 else []


def lower_convs_to_bf16(model: ov.Model, modules: Collection[str]) -> int:
    """Run the convolutions of `modules` in bf16 (in place); returns how many were lowered.

    Every consumer of a lowered conv still receives f32, so the graph's other nodes and its inputs
    and outputs keep their types.
    """
    wanted = set(modules)
    lowered = 0
    for conv in [n for n in model.get_ordered_ops() if n.get_type_name() in CONV_TYPES]:
        if conv_module(conv) not in wanted:
            continue
        consumers = list(conv.output(0).get_target_inputs())
        back = ops.convert(conv.output(0), "f32")
        for consumer in consumers:
            consumer.replace_source_output(back.output(0))
        for port in (0, 1):  # activations and weights
            conv.input(port).replace_source_output(ops.convert(conv.input_value(port), "bf16").output(0))
        lowered += 1
    missing = wanted - set(conv_modules(model))
    if missing:
        raise ValueError(f"no convolution for {sorted(missing)[0]} (and {len(missing) - 1} more)")
    model.validate_nodes_and_infer_types()
    return lowered
