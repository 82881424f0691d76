"""Which graphs get the native op: setting, explicit f32, library, measured table, device."""

from dataclasses import replace

import pytest

from qwen3tts.runtime import native_plan
from qwen3tts.runtime.native_plan import choose_fused_code_predictor, choose_native
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


def _fused(settings, isa, available=("CPU",)):
    return choose_fused_code_predictor(settings, isa, CPU_ONLY, list(available))


def test_the_fused_frame_is_off_for_never_f32_no_library_another_device_and_no_avx2():
    cases = [
        (DeviceSettings(native_kernels="never"), "avx512_vnni", ("CPU",), "never"),
        (DeviceSettings(native_kernels="always", inference_precision="f32"), "avx2", ("CPU",), "f32"),
        (DeviceSettings(native_kernels="always"), None, ("CPU",), "not built"),
        (DeviceSettings(native_kernels="always"), "avx2", ("CPU", "GPU.0"), "not run on the CPU"),
        (DeviceSettings(native_kernels="always"), "generic", ("CPU",), "no AVX2"),
    ]
    for settings, isa, available, reason in cases:
        choice = _fused(settings, isa, available)
        assert not choice.wanted and reason in choice.why, (settings, isa, choice)


def test_always_wants_the_fused_frame_at_every_batch_on_any_simd_set():
    for isa in ("avx2", "avx_vnni", "avx512", "avx512_vnni"):
        choice = _fused(DeviceSettings(native_kernels="always"), isa)
        assert choice.wanted and choice.up_to is None


def test_auto_wants_it_only_where_and_up_to_the_batch_it_was_measured_faster(monkeypatch):
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "AuthenticAMD")
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {("AuthenticAMD", "avx512"): 3})
    choice = _fused(DeviceSettings(), "avx512")
    assert choice.wanted and choice.up_to == 3 and "on AuthenticAMD up to batch 3" in choice.why
    choice = _fused(DeviceSettings(), "avx2")
    assert not choice.wanted and "not measured faster with the avx2 kernels on AuthenticAMD" in choice.why
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "GenuineIntel")  # same kernels, another class
    assert not _fused(DeviceSettings(), "avx512").wanted


def test_auto_takes_the_measured_batch_limit_of_each_cpu_class(monkeypatch):
    for (vendor, isa), up_to in native_plan.FUSED_FASTER_UP_TO.items():
        monkeypatch.setattr(native_plan, "cpu_vendor", lambda vendor=vendor: vendor)
        assert up_to >= 1 and _fused(DeviceSettings(), isa).up_to == up_to


def test_a_sequence_bound_within_the_frames_limit_leaves_no_graph_beside_it(monkeypatch):
    # the engine never runs a batch above engine.max_num_seqs: the plugin's graph (a compiled copy of the
    # weights) would only be memory
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "AuthenticAMD")
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {("AuthenticAMD", "avx2"): 8})
    for max_num_seqs, up_to in ((1, None), (4, None), (8, None), (9, 8), (16, 8)):
        choice = choose_fused_code_predictor(
            DeviceSettings(), "avx2", CPU_ONLY, ["CPU"], "int8", max_num_seqs
        )
        assert choice.wanted and choice.up_to == up_to, max_num_seqs
        assert ("max_num_seqs" in choice.why) == (up_to is None), choice.why


def test_the_cpu_vendor_is_the_first_vendor_id_of_cpuinfo():
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\nprocessor\t: 1\nvendor_id\t: X\n"
    assert native_plan.vendor_of(text) == "AuthenticAMD"
    assert native_plan.vendor_of("processor\t: 0\nvendor_id\t:\n") == "unknown"
    assert native_plan.vendor_of("") == "unknown"


def test_weights_the_frame_cannot_read_keep_the_graph_under_auto_and_always(monkeypatch):
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {(native_plan.cpu_vendor(), "avx512"): 2})
    unreadable = ("f32", "f16", "int4", "int4_asym_g128", "int4_sym_g256", "int4_sym_g128 (g16 x 3)")
    for settings in (DeviceSettings(), DeviceSettings(native_kernels="always")):
        for weights in unreadable:
            choice = choose_fused_code_predictor(settings, "avx512", CPU_ONLY, ["CPU"], weights)
            assert not choice.wanted and f"weights are {weights}, not INT8 or INT4_SYM" in choice.why
        assert choose_fused_code_predictor(settings, "avx512", CPU_ONLY, ["CPU"], "int8").wanted


INT4_LABELS = (
    "int4_sym_g128",  # a real checkpoint's int4-cp build
    "int4_sym_g128 (g32 x 20)",  # a tiny one's: nncf's fallback groups named
    "int4_sym_g128 (g32 x 20, g64 x 4)",
    "int4_sym_g64+heads8",  # a mixed policy: INT8 heads beside INT4 layers
)


def test_int4_weights_take_the_frame_under_auto_only_where_the_int4_frame_measured_faster(monkeypatch):
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "AuthenticAMD")
    # the INT8 frame's measurement says nothing about the INT4 one
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {("AuthenticAMD", "avx512"): 2})
    monkeypatch.setattr(native_plan, "FUSED_INT4_FASTER_UP_TO", {})
    for weights in INT4_LABELS:
        always = choose_fused_code_predictor(
            DeviceSettings(native_kernels="always"), "avx512", CPU_ONLY, ["CPU"], weights
        )
        assert always.wanted and always.up_to is None, weights
        auto = choose_fused_code_predictor(DeviceSettings(), "avx512", CPU_ONLY, ["CPU"], weights)
        assert not auto.wanted and "INT4 frame is not measured faster" in auto.why, weights
    monkeypatch.setattr(native_plan, "FUSED_INT4_FASTER_UP_TO", {("AuthenticAMD", "avx512"): 3})
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {})
    for weights in INT4_LABELS:
        auto = choose_fused_code_predictor(DeviceSettings(), "avx512", CPU_ONLY, ["CPU"], weights, 4)
        assert auto.wanted and auto.up_to == 3 and "up to batch 3 with INT4 weights" in auto.why, weights
        within = choose_fused_code_predictor(DeviceSettings(), "avx512", CPU_ONLY, ["CPU"], weights, 2)
        assert within.wanted and within.up_to is None, weights
    # and the INT4 table says nothing about INT8 weights
    assert not choose_fused_code_predictor(DeviceSettings(), "avx512", CPU_ONLY, ["CPU"], "int8").wanted
    never = choose_fused_code_predictor(
        DeviceSettings(native_kernels="never"), "avx512", CPU_ONLY, ["CPU"], INT4_LABELS[0]
    )
    assert not never.wanted


def test_auto_takes_the_native_talker_only_where_it_measured_faster_up_to_the_engines_sequences(monkeypatch):
    assert DeviceSettings().native_talker == "auto"
    monkeypatch.setattr(native_plan, "NATIVE_TALKER_UP_TO", {("AuthenticAMD", "avx2"): 4})
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "AuthenticAMD")
    auto = DeviceSettings()
    for seqs in (1, 4):
        choice = native_plan.choose_native_talker(auto, "avx2", CPU_ONLY, ["CPU"], seqs)
        assert choice.wanted and "up to 4 sequences" in choice.why, seqs
    above = native_plan.choose_native_talker(auto, "avx2", CPU_ONLY, ["CPU"], 5)
    assert not above.wanted and "engine.max_num_seqs 5 is above the 4" in above.why
    other_set = native_plan.choose_native_talker(auto, "avx512_vnni", CPU_ONLY, ["CPU"], 1)
    assert not other_set.wanted and "not measured faster with the avx512_vnni kernels" in other_set.why
    no_kernels = native_plan.choose_native_talker(
        DeviceSettings(native_kernels="never"), "avx2", CPU_ONLY, ["CPU"], 1
    )
    assert not no_kernels.wanted and "native_kernels is never" in no_kernels.why
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "GenuineIntel")  # the same kernels, another class
    assert not native_plan.choose_native_talker(auto, "avx2", CPU_ONLY, ["CPU"], 1).wanted


def test_never_and_always_decide_the_native_talker_whatever_was_measured(monkeypatch):
    monkeypatch.setattr(native_plan, "cpu_vendor", lambda: "AuthenticAMD")
    never = native_plan.choose_native_talker(
        DeviceSettings(native_talker="never"), "avx2", CPU_ONLY, ["CPU"], 1
    )
    assert not never.wanted and "native_talker is never" in never.why
    for kernels in ("never", "auto", "always"):
        settings = DeviceSettings(native_talker="always", native_kernels=kernels)
        assert native_plan.choose_native_talker(settings, "avx512_vnni", CPU_ONLY, ["CPU"], 64).wanted


def test_the_native_talker_is_off_for_f32_no_library_another_device_and_no_avx2():
    always = DeviceSettings(native_talker="always")
    cases = [
        (replace(always, inference_precision="f32"), "avx2", ["CPU"], "exact f32"),
        (always, None, ["CPU"], "not built"),
        (always, "avx2", ["CPU", "GPU.0"], "not run on the CPU"),
        (always, "generic", ["CPU"], "no AVX2"),
    ]
    for settings, isa, available, reason in cases:
        choice = native_plan.choose_native_talker(settings, isa, CPU_ONLY, available, 1)
        assert not choice.wanted and reason in choice.why, (isa, available)
