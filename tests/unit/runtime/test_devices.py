"""The device plan picks the first preferred device that exists and compiles, and says why."""

import pytest

from qwen3tts.errors import DeviceError
from qwen3tts.runtime.devices import (
    candidates,
    compile_properties,
    inference_precision,
    place,
    preference_lists,
)
from qwen3tts.settings import DeviceSettings

pytestmark = pytest.mark.device

GPU_AND_NPU = ["CPU", "GPU", "NPU"]
GPU_ONLY = ["CPU", "GPU"]
CPU_ONLY = ["CPU"]


def plan(available, fails_on=()):
    """Place every component with a fake compiler that fails on the devices in `fails_on`."""
    compiled = {}

    def compiler(component):
        def try_compile(device):
            if device in fails_on:
                raise RuntimeError(f"[{device}] cannot compile {component}\nlong plugin trace")
            return f"{component}@{device}"

        return try_compile

    for component, prefs in preference_lists(DeviceSettings()).items():
        compiled[component] = place(component, prefs, available, compiler(component))
    return {name: placement for name, (placement, _) in compiled.items()}


def test_with_gpu_and_npu_the_talker_goes_to_the_gpu_and_the_codec_to_the_npu():
    placements = plan(GPU_AND_NPU)
    assert {k: p.device for k, p in placements.items()} == {
        "talker": "GPU",
        "code_predictor": "GPU",
        "codec": "NPU",
    }


def test_with_a_gpu_only_the_codec_falls_back_to_the_gpu_and_says_why():
    placements = plan(GPU_ONLY)
    assert placements["codec"].device == "GPU"
    assert placements["codec"].skipped == ("NPU: not present",)


def test_on_a_cpu_only_machine_everything_runs_on_the_cpu():
    placements = plan(CPU_ONLY)
    assert {p.device for p in placements.values()} == {"CPU"}
    assert placements["talker"].skipped == ("GPU: not present",)


def test_a_compile_failure_on_the_npu_falls_through_to_the_next_device_with_the_reason():
    placements = plan(GPU_AND_NPU, fails_on=("NPU",))
    assert placements["codec"].device == "GPU"
    assert placements["codec"].skipped == ("NPU: compile failed: [NPU] cannot compile codec",)


def test_when_no_device_compiles_the_error_names_the_component_and_every_reason():
    with pytest.raises(DeviceError, match=r"talker: no device could compile it.*GPU: compile failed.*CPU"):
        place("talker", ("GPU", "CPU"), GPU_ONLY, lambda d: (_ for _ in ()).throw(RuntimeError(f"{d} broke")))


def test_numbered_devices_match_their_family_in_order():
    order, skipped = candidates(("GPU", "CPU"), ["CPU", "GPU.0", "GPU.1"])
    assert order == ["GPU.0", "GPU.1", "CPU"]
    assert skipped == []


def test_cpu_properties_carry_threads_pinning_and_precision_but_the_npu_gets_none_of_the_cpu_keys():
    settings = DeviceSettings(inference_precision="f32", num_threads=2, cpu_pinning=False)
    cpu = compile_properties("CPU", settings, kv_cache_precision="u8")
    assert cpu["INFERENCE_PRECISION_HINT"] == "f32"
    assert cpu["INFERENCE_NUM_THREADS"] == 2
    assert cpu["ENABLE_CPU_PINNING"] is False
    assert cpu["KV_CACHE_PRECISION"] == "u8"
    assert cpu["DYNAMIC_QUANTIZATION_GROUP_SIZE"] == 0  # exact: no int8 activations on VNNI CPUs
    npu = compile_properties("NPU", settings, kv_cache_precision="u8")
    assert "INFERENCE_NUM_THREADS" not in npu and "KV_CACHE_PRECISION" not in npu
    assert "DYNAMIC_QUANTIZATION_GROUP_SIZE" not in npu


def test_auto_precision_leaves_the_plugins_dynamic_quantization_at_its_default():
    props = compile_properties("CPU", DeviceSettings(inference_precision="auto"), component="talker")
    assert "DYNAMIC_QUANTIZATION_GROUP_SIZE" not in props


def test_auto_precision_is_f32_on_a_bf16_cpu_and_says_why_per_component():
    settings = DeviceSettings(inference_precision="auto")
    codec, why = inference_precision("codec", "CPU", settings, ("BF16", "FP32", "INT8"))
    assert codec == "f32" and "dB" in why  # the codec's bf16 decode failed the SNR threshold
    talker, why = inference_precision("talker", "CPU", settings, ("BF16", "FP32", "INT8"))
    assert talker == "f32" and "no faster" in why
    plain, why = inference_precision("talker", "CPU", settings, ("FP32", "INT8"))
    assert plain == "f32" and "no bf16" in why
    props = compile_properties("CPU", settings, component="codec", capabilities=("BF16", "FP32"))
    assert props["INFERENCE_PRECISION_HINT"] == "f32"


def test_auto_precision_leaves_accelerators_at_their_default_and_an_explicit_setting_wins():
    auto = DeviceSettings(inference_precision="auto")
    assert inference_precision("talker", "GPU.0", auto, ("FP16",))[0] is None
    assert "INFERENCE_PRECISION_HINT" not in compile_properties("NPU", auto, component="codec")
    explicit = DeviceSettings(inference_precision="bf16")
    assert inference_precision("codec", "CPU", explicit, ("BF16",)) == (
        "bf16",
        "set in devices.inference_precision",
    )


def test_a_tiny_bundle_runs_on_one_thread_unless_the_configuration_names_a_number():
    from qwen3tts.runtime.devices import SMALL_DECODE_BYTES, threads_for

    tiny, release = 9 * 2**20, 600 * 2**20  # a `qwen3tts tiny` bundle's decode weights; release shapes
    assert threads_for(tiny, DeviceSettings()).num_threads == 1
    assert threads_for(tiny, DeviceSettings(num_threads=3)).num_threads == 3
    assert threads_for(release, DeviceSettings()).num_threads == 0  # every core, random weights or not
    assert threads_for(SMALL_DECODE_BYTES, DeviceSettings()).num_threads == 0
    assert threads_for(release, DeviceSettings(num_threads=2)).num_threads == 2
