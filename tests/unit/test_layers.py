"""The layers import one way (STYLE.md habit 2); libraries are confined to their adapters."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "daemon" / "qwen3tts"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files_under(*parts: str) -> list[Path]:
    return sorted((PACKAGE.joinpath(*parts)).rglob("*.py"))


def offenders(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in files:
        for name in imported_modules(path):
            if name == forbidden or any(name == f or name.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(PACKAGE)} imports {name}")
    return found


def test_the_product_never_imports_torch_or_the_reference_package():
    assert files_under(), "no product files found"
    assert offenders(files_under(), ("torch", "transformers", "qwen_tts")) == []


def test_the_engine_is_pure_python_and_numpy():
    assert (
        offenders(
            files_under("engine"),
            ("openvino", "qwen3tts.runtime", "qwen3tts.appliance", "qwen3tts.model", "paho", "sounddevice"),
        )
        == []
    )


def test_the_model_layer_knows_nothing_of_run_time_layers():
    assert (
        offenders(files_under("model"), ("qwen3tts.runtime", "qwen3tts.engine", "qwen3tts.appliance")) == []
    )


def test_the_runtime_does_not_reach_up_into_the_appliance():
    assert offenders(files_under("runtime"), ("qwen3tts.appliance",)) == []


def test_paho_only_in_the_mqtt_adapter_and_sounddevice_only_in_the_audio_adapter():
    paho = [p for p in files_under() if p.name != "mqtt.py"]
    audio = [p for p in files_under() if p.name != "alsa.py"]
    assert offenders(paho, ("paho",)) == []
    assert offenders(audio, ("sounddevice",)) == []


def test_the_voice_registry_is_read_without_openvino_or_the_appliance():
    assert files_under("voices"), "no voices files found"
    forbidden = (
        "openvino",
        "qwen3tts.runtime",
        "qwen3tts.appliance",
        "qwen3tts.engine",
        "paho",
        "sounddevice",
    )
    assert offenders(files_under("voices"), forbidden) == []
