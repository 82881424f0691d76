"""Which graphs get the native op: setting, explicit f32, library, measured table, device."""

from dataclasses import replace

import pytest

from qwen3tts.runtime import native_plan
from qwen3tts.runtime.native_plan import choose_native
from qwen3tts.settings import DeviceSettings

CPU_ONLY = {"talker": ("GPU", "CPU"), "code_predictor": ("GPU", "CPU")}


def test_never_and_an_explicit_f32_turn_it_off_whatever_else_holds():
    for settings in (
        DeviceSettings(native_kernels="never"),
        DeviceSettings(native_kernels="always", inference_precision="f32"),
    ):
        choice = choose_native(settings, "avx2", CPU_ONLY, ["CPU"])
        assert choice.components == frozenset()
    assert (
        "f32"
        in choose_native(replace(DeviceSettings(), inference_precision="f32"), "avx2", CPU_ONLY, ["CPU"]).why
    )


def test_without_the_library_nothing_is_rewritten():
    choice = choose_native(DeviceSettings(native_kernels="always"), None, CPU_ONLY, ["CPU"])
    assert choice.components == frozenset() and "not built" in choice.why


def test_always_takes_both_int8_graphs_that_run_on_the_cpu():
    choice = choose_native(DeviceSettings(native_kernels="always"), "avx2", CPU_ONLY, ["CPU"])
    assert choice.components == {"talker", "code_predictor"}


def test_a_graph_placed_on_another_device_keeps_its_plugin_graph():
    # with a GPU present the talker (and the code predictor, which follows it) compile there: the op
    # would make the GPU compile fail and push them to the CPU
    choice = choose_native(DeviceSettings(native_kernels="always"), "avx2", CPU_ONLY, ["CPU", "GPU.0"])
    assert choice.components == frozenset() and "would not run on the CPU" in choice.why


def test_auto_follows_the_measured_table_for_the_kernel_set(monkeypatch):
    monkeypatch.setattr(native_plan, "MEASURED_FASTER", {"avx2": frozenset({"code_predictor"})})
    choice = choose_native(DeviceSettings(), "avx2", CPU_ONLY, ["CPU"])
    assert choice.components == {"code_predictor"} and "measured faster" in choice.why
    unmeasured = choose_native(DeviceSettings(), "avx512_vnni", CPU_ONLY, ["CPU"])
    assert unmeasured.components == frozenset() and "not measured faster with avx512_vnni" in unmeasured.why


@pytest.mark.parametrize("value", ["on", "off", True])
def test_the_setting_takes_words_yaml_does_not_turn_into_booleans(value):
    from qwen3tts.errors import ConfigError
    from qwen3tts.settings_loader import load_settings

    with pytest.raises(ConfigError, match=r"devices\.native_kernels"):
        load_settings(None, [f"devices.native_kernels={value}"])
