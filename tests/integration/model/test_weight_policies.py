"""Weight compression policies of `qwen3tts build`: INT8 per channel, INT4 per group, errors named."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest

from qwen3tts.errors import BundleError
from qwen3tts.model.build import PRECISION_POLICIES
from qwen3tts.model.bundle import read_manifest
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.compression import compress_weights, gather_tables_to_f16, int4_group_sizes
from qwen3tts.model.graphs.code_predictor import build_code_predictor


@pytest.fixture(scope="module")
def predictor(tiny_models):
    checkpoint = load_checkpoint(tiny_models.checkpoint())
    spec = checkpoint.spec
    return lambda: build_code_predictor(spec.code_predictor, spec.talker.hidden_size, checkpoint.weights)


def _constant_types(model: ov.Model) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in model.get_ops():
        if op.get_type_name() == "Constant":
            name = op.get_element_type().get_type_name()
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_int4_policy_stores_every_matmul_weight_in_four_bits_and_keeps_tables(predictor):
    int8 = _constant_types(compress_weights(predictor(), "int8"))
    int4 = _constant_types(compress_weights(predictor(), "int4_sym_g32"))
    # every matrix INT8 compresses (all MatMul weights, lm_heads included; Gather tables never) is
    # INT4 here: no layer falls back to INT8
    assert int8.get("i8", 0) > 0 and int8.get("i4", 0) == 0
    assert int4.get("i4", 0) == int8["i8"] and int4.get("i8", 0) == 0


def test_asym_int4_uses_unsigned_codes_with_zero_points(predictor):
    types = _constant_types(compress_weights(predictor(), "int4_asym_g32"))
    assert types.get("u4", 0) > 0


def test_asym_int8_uses_unsigned_codes_with_zero_points(predictor):
    types = _constant_types(compress_weights(predictor(), "int8_asym"))
    assert types.get("u8", 0) > 0 and types.get("i8", 0) == 0


@pytest.mark.parametrize(
    ("suffix", "int8_per_layer", "int8_layers"), [("heads8", 0, 0), ("ends8", 4, 2), ("attn8", 2, None)]
)
def test_mixed_policies_keep_the_named_matrices_in_int8(
    predictor, tiny_models, suffix, int8_per_layer, int8_layers
):
    spec = load_checkpoint(tiny_models.checkpoint()).spec.code_predictor
    heads, layers = spec.num_code_groups - 1, spec.num_hidden_layers  # per layer: qkv, o, gate_up, down
    all_int8 = _constant_types(compress_weights(predictor(), "int8"))["i8"]
    types = _constant_types(compress_weights(predictor(), f"int4_sym_g32+{suffix}"))
    kept = heads + int8_per_layer * (layers if int8_layers is None else int8_layers)
    assert types.get("i8", 0) == kept
    assert types.get("i4", 0) == all_int8 - kept  # (the tiny predictor has 2 layers: ends8 is all INT8)


def test_unknown_precision_is_named():
    with pytest.raises(BundleError, match="int3_sym_g32"):
        compress_weights(ov.Model([], []), "int3_sym_g32")
    with pytest.raises(BundleError, match=r"int4_sym_g32\+tails8"):
        compress_weights(ov.Model([], []), "int4_sym_g32+tails8")


def test_every_policy_names_a_precision_for_each_component():
    for name, policy in PRECISION_POLICIES.items():
        assert set(policy) == {"talker", "code_predictor", "codec", "tables"}, name
        for precision in policy.values():
            assert precision in ("f32", "f16", "int8", "int8_asym") or precision.startswith("int4_"), (
                name,
                precision,
            )
    assert np.all([p["codec"] in ("f16", "f32") for p in PRECISION_POLICIES.values()])


def _gather_tables(model: ov.Model) -> list[ov.Node]:
    """The node feeding each Gather's data input where that is a 2-D table (a Constant or its Convert)."""
    found = []
    for op in model.get_ops():
        if op.get_type_name() != "Gather":
            continue
        source = op.input_value(0).get_node()
        root = source.input_value(0).get_node() if source.get_type_name() == "Convert" else source
        if root.get_type_name() == "Constant" and len(root.get_output_shape(0)) == 2:
            found.append(source)
    return found


def test_compressed_graphs_store_their_embedding_tables_in_f16_and_gather_the_same_rows(predictor):
    f32 = predictor()
    tables = {node.get_friendly_name(): node.get_data() for node in _gather_tables(f32)}
    assert tables and all(t.dtype == np.float32 for t in tables.values())

    model = gather_tables_to_f16(compress_weights(predictor(), "int8"))

    widened = _gather_tables(model)
    assert len(widened) >= len(tables)  # shared tables may feed several Gathers
    for convert in widened:
        assert convert.get_type_name() == "Convert" and convert.get_output_element_type(0) == ov.Type.f32
        table = convert.input_value(0).get_node()
        assert table.get_output_element_type(0) == ov.Type.f16
        original = tables[table.get_friendly_name()]
        np.testing.assert_array_equal(table.get_data(), original.astype(np.float16))
    assert not [
        n
        for n in model.get_ops()
        if n.get_type_name() == "Constant"
        and n.get_output_element_type(0) == ov.Type.f32
        and n.get_output_shape(0) in [t.shape for t in tables.values()]
    ]


def test_int4_groups_that_do_not_divide_the_input_channels_fall_back_to_smaller_groups(predictor):
    # the tiny predictor's matrices have 32-96 input channels: group 128 divides none of them
    int8 = _constant_types(compress_weights(predictor(), "int8"))
    model = compress_weights(predictor(), "int4_sym_g128")
    assert _constant_types(model).get("i4", 0) == int8["i8"]  # still every matrix in INT4
    sizes = int4_group_sizes(model)
    assert sizes and 128 not in sizes and set(sizes) <= {32, 64}, sizes


def test_the_int4_cp_build_of_a_tiny_checkpoint_names_its_fallback_groups(tiny_models):
    # used to fail with nncf's InvalidGroupSizeError on every tiny checkpoint
    manifest = read_manifest(tiny_models.bundle(weights="int4-cp"))
    label = manifest.precision["code_predictor"]
    assert label.startswith("int4_sym_g128 (g32 x ") or label.startswith("int4_sym_g128 (g64 x "), label
    assert manifest.precision["talker"] == "int8"
