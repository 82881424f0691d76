"""The codec variant choice: the first gated variant the CPU can run fast, else the exact graphs, and why."""

import logging
from dataclasses import replace

from qwen3tts.model.bundle import CodecVariant
from qwen3tts.runtime.codec_variants import choose_codec_variant, pick_for_load
from qwen3tts.settings import DeviceSettings

BF16_CPU = ("BF16", "FP32", "INT8", "EXPORT_IMPORT")  # what OpenVINO reports on an AVX-512 BF16 CPU
AVX2_CPU = ("FP32", "INT8", "EXPORT_IMPORT")
TAIL = CodecVariant("bf16-tail", ("BF16",), 37.4, 35.0, ("decoder.decoder.6",), 34)
AUTO = DeviceSettings()


def test_auto_takes_a_gated_variant_on_a_cpu_with_what_it_needs_and_says_why():
    chosen, why = choose_codec_variant((TAIL,), AUTO, "CPU", BF16_CPU)
    assert chosen == TAIL
    assert "BF16" in why and "37.4 dB" in why and "35 dB" in why


def test_auto_keeps_the_exact_graphs_on_a_cpu_without_bf16():
    chosen, why = choose_codec_variant((TAIL,), AUTO, "CPU", AVX2_CPU)
    assert chosen is None
    assert "need BF16" in why and "FP32" in why


def test_f32_forces_the_exact_graphs_even_where_a_variant_fits():
    chosen, why = choose_codec_variant((TAIL,), replace(AUTO, codec_variant="f32"), "CPU", BF16_CPU)
    assert chosen is None and "f32" in why


def test_an_explicit_f32_inference_precision_means_the_exact_graphs():
    # even with codec_variant auto or naming the variant: f32 is a request for exact arithmetic
    for variant in ("auto", "bf16-tail"):
        exact = replace(AUTO, inference_precision="f32", codec_variant=variant)
        chosen, why = choose_codec_variant((TAIL,), exact, "CPU", BF16_CPU)
        assert chosen is None and "inference_precision f32" in why


def test_a_variant_recorded_below_todays_gate_is_never_picked():
    weak = replace(TAIL, snr_db=30.0, min_snr_db=30.0)  # e.g. built when the gate was lower
    chosen, why = choose_codec_variant((weak,), AUTO, "CPU", BF16_CPU)
    assert chosen is None and "35 dB" in why


def test_older_bundles_without_variants_load_the_exact_graphs():
    chosen, why = choose_codec_variant((), AUTO, "CPU", BF16_CPU)
    assert chosen is None and "no other variant" in why


def test_the_first_fitting_variant_wins_in_the_manifests_order():
    amx = CodecVariant("bf16-tail", ("AMX_BF16",), 40.0, 35.0)  # a hypothetical stricter variant first
    chosen, _ = choose_codec_variant((amx, TAIL), AUTO, "CPU", BF16_CPU)
    assert chosen == TAIL
    chosen, _ = choose_codec_variant((amx, TAIL), AUTO, "CPU", (*BF16_CPU, "AMX_BF16"))
    assert chosen == amx


def test_variants_are_for_the_cpu_plugin_and_an_explicit_whole_graph_precision_wins():
    assert choose_codec_variant((TAIL,), AUTO, "GPU.0", ("FP16",))[0] is None
    bf16_everywhere = replace(AUTO, inference_precision="bf16")
    chosen, why = choose_codec_variant((TAIL,), bf16_everywhere, "CPU", BF16_CPU)
    assert chosen is None and "inference_precision bf16" in why


def test_an_explicitly_named_variant_is_taken_when_it_passes_and_fits():
    named = replace(AUTO, codec_variant="bf16-tail")
    chosen, why = choose_codec_variant((TAIL,), named, "CPU", BF16_CPU)
    assert chosen == TAIL and "set in devices.codec_variant" in why


class FakeCompiler:
    """What pick_for_load reads from a PartCompiler: settings, available devices, capabilities."""

    def __init__(self, settings, available, capabilities):
        self.settings, self.available, self._capabilities = settings, available, capabilities

    def capabilities(self, device):
        return self._capabilities[device]


def test_pick_for_load_uses_the_first_device_the_codec_will_try_and_logs_one_line(caplog):
    compiler = FakeCompiler(AUTO, ["CPU"], {"CPU": BF16_CPU})
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.codec_variants"):
        assert pick_for_load(compiler, (TAIL,), ("NPU", "GPU", "CPU")) == "bf16-tail"
    assert len(caplog.records) == 1 and "bf16-tail" in caplog.records[0].getMessage()
    on_gpu = FakeCompiler(AUTO, ["CPU", "GPU"], {"CPU": BF16_CPU, "GPU": ("FP16",)})
    assert pick_for_load(on_gpu, (TAIL,), ("NPU", "GPU", "CPU")) is None


def test_a_named_variant_the_bundle_lacks_is_a_warning_and_the_exact_graphs(caplog):
    compiler = FakeCompiler(replace(AUTO, codec_variant="bf16-tail"), ["CPU"], {"CPU": BF16_CPU})
    with caplog.at_level(logging.INFO, logger="qwen3tts.runtime.codec_variants"):
        assert pick_for_load(compiler, (), ("CPU",)) is None
    assert caplog.records[0].levelno == logging.WARNING
