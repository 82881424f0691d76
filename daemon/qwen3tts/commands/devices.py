"""`qwen3tts devices`: the OpenVINO devices present, their properties, and the device plan."""

from __future__ import annotations

import argparse

from qwen3tts.settings import Settings

PROPERTIES = ("FULL_DEVICE_NAME", "OPTIMIZATION_CAPABILITIES", "INFERENCE_PRECISION_HINT", "DEVICE_TYPE")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options: the plan comes from the devices settings (override with --set devices.talker=[CPU])."""


def devices(args: argparse.Namespace, settings: Settings) -> int:
    import openvino as ov

    from qwen3tts.runtime.devices import candidates, preference_lists

    core = ov.Core()
    available = list(core.available_devices)
    print(f"OpenVINO {ov.get_version()}; devices: {', '.join(available)}")
    for device in available:
        print(f"{device}:")
        for name in PROPERTIES:
            try:
                value = core.get_property(device, name)
            except Exception as exc:  # a plugin may not know a property; show why instead of failing
                value = f"(unavailable: {str(exc).splitlines()[0][:80]})"
            print(f"  {name}: {value}")
    print("plan (first candidate is tried first; a compile failure falls through at start):")
    for component, prefs in preference_lists(settings.devices).items():
        order, skipped = candidates(prefs, available)
        why = f"  (skipped {'; '.join(skipped)})" if skipped else ""
        print(f"  {component}: {' -> '.join(order) or 'none'}{why}")
    return 0
