"""Only appliance/mqtt.py talks to paho; the intake, spool and messages stay library-free."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import qwen3tts.appliance

APPLIANCE = Path(qwen3tts.appliance.__file__).parent


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_mqtt_py_imports_paho():
    files = sorted(APPLIANCE.glob("*.py"))
    assert any(p.name == "mqtt.py" for p in files)
    importers = [p.name for p in files if "paho" in imported_roots(p)]
    assert importers == ["mqtt.py"]


def test_the_intake_modules_import_nothing_outside_the_standard_library_and_qwen3tts():
    for name in (
        "messages.py",
        "payload.py",
        "fields.py",
        "answers.py",
        "policy.py",
        "reply_topics.py",
        "recent_ids.py",
        "events.py",
        "hermes.py",
        "intake.py",
        "queue.py",
        "discovery.py",
    ):
        third_party = imported_roots(APPLIANCE / name) - {"qwen3tts", "__future__"}
        assert third_party <= set(sys.stdlib_module_names), (name, third_party)
