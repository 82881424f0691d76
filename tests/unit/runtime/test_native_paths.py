"""Which decode paths the loader takes on the CPU (runtime/native_paths.py), with the real native
library (native/build, built by scripts/setup.sh) on hand-made OpenVINO graphs: the INT8 MatMul rewrite
and what the plan records, and the fall-back to the plugin's graphs, with its log line, when a native
path is not wanted or cannot read the graph. The choices themselves are test_native_plan.py; whole
bundles through the loader are tests/integration/runtime."""

import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from qwen3tts.model.spec import CodePredictorSpec, TalkerSpec
from qwen3tts.runtime.devices import DevicePlan
from qwen3tts.runtime.native import DEFAULT_LIBRARY, OP_TYPE
from qwen3tts.runtime.native_paths import fused_code_predictor_or_none, native_kernels, native_talker_or_none
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.settings import DeviceSettings, Settings

ON_CPU = {"talker": ["CPU"], "code_predictor": ["CPU"], "codec": ["CPU"]}
PREDICTOR = CodePredictorSpec(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    rms_norm_eps=1e-6,
    rope_theta=1e6,
    vocab_size=128,
    num_code_groups=16,
    input_size=64,
)
TALKER = TalkerSpec(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    rms_norm_eps=1e-6,
    rope_theta=1e6,
    vocab_size=192,
    text_vocab_size=100,
    text_hidden_size=32,
    num_code_groups=16,
    max_position_embeddings=256,
)
LOG = "qwen3tts.runtime.loader"


def compiler(**devices) -> PartCompiler:
    return PartCompiler(DeviceSettings(talker=("CPU",), **devices), available=["CPU"])


def int8_matmul_graph() -> ov.Model:
    """x @ W.T with W an INT8_SYM compressed constant (i8 rows times a per-row scale), as NNCF writes it."""
    x = ops.parameter([1, 8], np.float32, name="x")
    rows = ops.constant(np.arange(-16, 16, dtype=np.int8).reshape(4, 8))
    scale = ops.constant(np.full((4, 1), 0.5, np.float32))
    weights = ops.multiply(ops.convert(rows, np.float32), scale)
    return ov.Model([ops.result(ops.matmul(x, weights, False, True))], [x], "int8")


def f32_graph() -> ov.Model:
    x = ops.parameter([1, 8], np.float32, name="x")
    weights = ops.constant(np.ones((4, 8), np.float32))
    return ov.Model([ops.result(ops.matmul(x, weights, False, True))], [x], "f32")


def op_types(model: ov.Model) -> set[str]:
    return {node.get_type_name() for node in model.get_ordered_ops()}


@pytest.fixture(scope="module")
def library():
    _rewrite, found = native_kernels(compiler(native_kernels="always"), ON_CPU, DevicePlan())
    assert found is not None, f"{DEFAULT_LIBRARY} is missing or does not load: scripts/setup.sh builds it"
    return found


def test_never_loads_no_library_and_rewrites_nothing(caplog):
    plan, model = DevicePlan(), int8_matmul_graph()
    with caplog.at_level(logging.INFO, logger=LOG):
        rewrite, found = native_kernels(compiler(native_kernels="never"), ON_CPU, plan)
    assert found is None
    assert rewrite("talker", model) is model and OP_TYPE not in op_types(model)
    assert plan.native == {}
    assert "native kernels: not used (devices.native_kernels is never)" in caplog.messages


def test_a_missing_library_is_said_and_nothing_is_rewritten(tmp_path, caplog):
    plan, model = DevicePlan(), int8_matmul_graph()
    settings = compiler(native_kernels="always", native_library=tmp_path / "absent.so")
    with caplog.at_level(logging.INFO, logger=LOG):
        rewrite, found = native_kernels(settings, ON_CPU, plan)
    assert found is None and rewrite("talker", model) is model and plan.native == {}
    assert "native kernels: not used (the library is not built or does not load)" in caplog.messages


def test_always_puts_the_int8_matmuls_of_the_chosen_graphs_on_the_native_op(library, caplog):
    plan, model = DevicePlan(), int8_matmul_graph()
    with caplog.at_level(logging.INFO, logger=LOG):
        rewrite, found = native_kernels(compiler(native_kernels="always"), ON_CPU, plan)
        assert rewrite("talker", model) is model
    assert OP_TYPE in op_types(model) and "MatMul" not in op_types(model)
    assert plan.native == {"talker": found.isa}
    assert f"talker: 1 INT8 MatMuls on the native {found.isa} kernels" in caplog.messages


def test_a_graph_on_another_device_keeps_its_matmuls(library):
    plan, model = DevicePlan(), int8_matmul_graph()
    prefs = ON_CPU | {"code_predictor": ["GPU"]}
    rewrite, _ = native_kernels(compiler(native_kernels="always"), prefs, plan)
    rewrite("code_predictor", model)
    assert "MatMul" in op_types(model) and plan.native == {}


NO_FILE = Path("/nonexistent/code_predictor.bin")  # the frame never builds in these tests


def manifest(weights="int8"):
    return SimpleNamespace(
        precision={"code_predictor": weights}, spec=SimpleNamespace(code_predictor=PREDICTOR)
    )


def test_the_fused_code_predictor_is_not_tried_when_not_wanted(library, caplog):
    plan = DevicePlan()
    with caplog.at_level(logging.INFO, logger=LOG):
        got = fused_code_predictor_or_none(
            compiler(native_kernels="always"),
            ON_CPU,
            plan,
            library,
            f32_graph(),
            manifest(weights="f16"),
            NO_FILE,
        )
    assert got is None and plan.fused == {} and plan.placements == {}
    assert caplog.messages == [
        "code_predictor: the plugin's graph, not the fused native frame "
        "(the bundle's code predictor weights are f16, not INT8 or INT4_SYM in groups of 32 to 128)"
    ]


def test_a_graph_the_fused_frame_cannot_read_falls_back_to_the_plugins_graph_with_the_reason(library, caplog):
    plan = DevicePlan()
    with caplog.at_level(logging.INFO, logger=LOG):
        got = fused_code_predictor_or_none(
            compiler(native_kernels="always"), ON_CPU, plan, library, f32_graph(), manifest(), NO_FILE
        )
    assert got is None and plan.fused == {} and plan.placements == {}
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage().startswith(
        "code_predictor: the plugin's graph, the fused native frame cannot run: "
    )
    assert "qkv_proj.weight is not a Constant of the graph" in warning.getMessage()


def talker_of_f32_graph(native_talker: str, plan: DevicePlan, library):
    """native_talker_or_none on a graph with no INT8 talker weights, the manifest saying INT8."""
    spec, precision = SimpleNamespace(talker=TALKER), {"talker": "int8"}
    devices = compiler(native_talker=native_talker)
    return native_talker_or_none(devices, ON_CPU, plan, library, f32_graph(), spec, Settings(), precision)


def test_the_native_talker_not_wanted_leaves_the_plugins_graph_with_the_reason(library, caplog):
    plan = DevicePlan()
    with caplog.at_level(logging.INFO, logger=LOG):
        got = talker_of_f32_graph("never", plan, library)
    assert got is None and plan.fused == {}
    assert caplog.messages == [
        "talker: the plugin's paged graph, not the native step (devices.native_talker is never)"
    ]


def test_a_talker_graph_the_native_step_cannot_read_falls_back_to_the_paged_graph(library, caplog):
    plan = DevicePlan()
    with caplog.at_level(logging.INFO, logger=LOG):
        got = talker_of_f32_graph("always", plan, library)
    assert got is None and plan.fused == {} and plan.placements == {}
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage().startswith("talker: the plugin's paged graph, the native step cannot run: ")


def test_a_chosen_graph_without_int8_matmuls_is_not_reported_on_the_native_op(library, caplog):
    # an f16 or INT4 bundle under native_kernels=always: the status must not say "plugin+op"
    plan, model = DevicePlan(), f32_graph()
    with caplog.at_level(logging.INFO, logger=LOG):
        rewrite, _ = native_kernels(compiler(native_kernels="always"), ON_CPU, plan)
        rewrite("talker", model)
    assert "MatMul" in op_types(model) and OP_TYPE not in op_types(model)
    assert plan.native == {} and plan.decode_path("talker") == "plugin"
    assert "talker: no INT8 MatMul for the native kernels, the plugin's graph" in caplog.messages
