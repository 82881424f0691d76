"""A switch that runs the code predictor's tie fallbacks on demand, so their memory is taken at load.

`exact_topk` (model/graphs/gumbel_sampler.py) runs a stable TopK in an `If` only when the top k hold a
tie. OpenVINO's CPU plugin gives an If body its memory (~140 KB for each of the 15 steps) the first time
the body runs and keeps it, growing it to the largest batch that had a tie; ties come by chance, so
without this the daemon's memory crept up by ~2 MiB over its first ~800 requests (docs/benchmarks.md,
"Whose memory it is"). No input can force a tie (the logits come out of an RMSNorm), so the loader adds
one boolean input, FORCE_TIE_FALLBACK, OR'd into every fallback's condition: the warm-up sets it for one
frame at the engine's largest batch, every real inference feeds False (switch_feed). The bundle on disk
does not change: this runs on the model as read, and finds the fallbacks by their structure
(is_tie_fallback), which every bundle's exact_topk has had, so bundles built before this keep loading and
get the switch too; a builder-given name would exist only in bundles built after it.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops

FORCE_TIE_FALLBACK = "force_tie_fallback"  # scalar bool: True runs every tie fallback's stable TopK


def add_fallback_switch(model: ov.Model) -> int:
    """Add the FORCE_TIE_FALLBACK input to `model` and OR it into each tie fallback's condition, however
    deep in If bodies; returns how many fallbacks it switches (0: the model is left as it was)."""
    switch = ops.parameter([], ov.Type.boolean, name=FORCE_TIE_FALLBACK)
    switch.output(0).set_names({FORCE_TIE_FALLBACK})
    switched = _switch_in(model, switch)
    if switched:
        model.add_parameters([switch])
        model.validate_nodes_and_infer_types()
    return switched


def has_fallback_switch(compiled) -> bool:
    """Whether a compiled code predictor has the switch (graphs compiled straight from a bundle do not)."""
    return any(FORCE_TIE_FALLBACK in port.get_names() for port in compiled.inputs)


def switch_feed(compiled) -> dict[str, np.ndarray]:
    """The switch off, as an infer feed's entry (every real inference); {} for a graph without it."""
    return {FORCE_TIE_FALLBACK: np.array(False)} if has_fallback_switch(compiled) else {}


def is_tie_fallback(node: ov.Node) -> bool:
    """exact_topk's If by its structure, which bundles of every age share: the then body is one stable
    TopK of its two inputs, the else body hands its last two inputs straight through."""
    if node.get_type_name() != "If":
        return False
    then_body, else_body = node.get_function(0), node.get_function(1)
    then_ops = [op.get_type_name() for op in then_body.get_ordered_ops()]
    if sorted(then_ops) != ["Parameter", "Parameter", "Result", "Result", "TopK"]:
        return False
    topk = next(op for op in then_body.get_ordered_ops() if op.get_type_name() == "TopK")
    if not topk.get_attributes().get("stable", False):
        return False
    return all(
        result.input_value(0).get_node().get_type_name() == "Parameter" for result in else_body.get_results()
    )


def _switch_in(model: ov.Model, switch: ov.Node) -> int:
    """OR `switch` (a Parameter of `model`, not yet added to it) into each tie fallback of `model`; an If
    holding fallbacks in a body gets a body Parameter of its own, fed from `switch`."""
    switched = 0
    for node in model.get_ordered_ops():
        if is_tie_fallback(node):
            condition = node.input_value(0)
            node.input(0).replace_source_output(ops.logical_or(condition, switch).output(0))
            switched += 1
        elif node.get_type_name() == "If":
            switched += _switch_in_bodies(node, switch)
    return switched


def _switch_in_bodies(node: ov.Node, switch: ov.Node) -> int:
    inner: list[ov.Node | None] = []
    switched = 0
    for index in (0, 1):
        body = node.get_function(index)
        param = ops.parameter([], ov.Type.boolean)
        count = _switch_in(body, param)
        if count:
            body.add_parameters([param])
        inner.append(param if count else None)
        switched += count
    if switched:
        node.set_input(switch.output(0), inner[0], inner[1])
    return switched
