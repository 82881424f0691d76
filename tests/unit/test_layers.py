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


def test_the_text_front_end_stands_alone():
    assert files_under("text"), "no text front end files found"
    forbidden = ("qwen3tts.appliance", "qwen3tts.runtime", "qwen3tts.engine", "qwen3tts.model", "openvino")
    assert offenders(files_under("text"), forbidden) == []


def test_paho_only_in_the_mqtt_adapter_and_sounddevice_only_in_the_audio_adapter():
    paho = [p for p in files_under() if p.name != "mqtt.py"]
    audio = [p for p in files_under() if p.name != "alsa.py"]
    assert offenders(paho, ("paho",)) == []
    assert offenders(audio, ("sounddevice",)) == []


def test_the_servers_reach_the_engine_and_only_the_pure_text_to_request_modules_of_the_appliance():
    servers = files_under("servers")
    assert servers, "no server files found"
    assert offenders(servers, ("paho", "sounddevice", "openvino", "qwen3tts.model")) == []
    allowed = {"qwen3tts.appliance.synthesis", "qwen3tts.appliance.sentences"}
    appliance = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in servers
        for name in imported_modules(path)
        if name.startswith("qwen3tts.appliance") and name not in allowed
    ]
    assert appliance == []


def test_no_lower_layer_imports_the_servers_and_their_libraries_stay_in_servers():
    lower = files_under("engine") + files_under("runtime") + files_under("model")
    assert offenders(lower, ("qwen3tts.servers",)) == []
    elsewhere = [p for p in files_under() if "servers" not in p.relative_to(PACKAGE).parts]
    assert offenders(elsewhere, ("wyoming", "starlette", "uvicorn", "prometheus_client")) == []


def test_only_the_doctor_command_reaches_into_the_doctor_package():
    outside = [p for p in files_under() if p.parent.name not in ("doctor", "commands")]
    assert files_under("doctor"), "no doctor files found"
    assert offenders(outside, ("qwen3tts.doctor",)) == []


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
