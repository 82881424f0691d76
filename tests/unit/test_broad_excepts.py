"""Broad `except Exception` (or BaseException, or a bare `except:`) only where something must go on whatever
one item does: a supervisor, a per-request isolation, a library boundary that raises nothing narrower.

Everything else catches what it expects. A handler that cleans up and re-raises (`except BaseException:
tidy(); raise`) swallows nothing and is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "daemon" / "qwen3tts"

ALLOWED = {
    # supervisors: a loop that must keep running
    "appliance/systemd/supervisor.py::Supervisor._supervise": "fail the item, restart the loop",
    "appliance/systemd/supervisor.py::Supervisor._recover": "failing the item failed; still restart",
    "appliance/systemd/supervisor.py::isolated": "the item boundary (the item, its report)",
    "appliance/mqtt/client.py::MqttClient.run": "restarts paho's network loop",
    "appliance/mqtt/client.py::MqttClient._on_message": "paho's thread: would end its loop",
    "appliance/mqtt/pool_link.py::PoolLink._on_message": "paho's thread: would end its loop",
    "appliance/mqtt/pool_rescue.py::Rescue._on_message": "paho's thread: would end its loop",
    "appliance/thermal/governor.py::ThermalMonitor.run": "a bad sample must not end thermal protection",
    "engine/engine.py::Engine.run": "the step loop: an engine bug must not hang every handle",
    "servers/wyoming_connection.py::WyomingHandler._do_work": "a connection's worker: error, then close",
    "commands/run.py::_Startup.run": "start-up: the main thread reports it",
    "appliance/audio/device_thread.py::DeviceThread._run": "a device call's exception goes to its caller",
    # per-request isolation: one request's failure finishes only that request
    "engine/step.py::StepPipeline._append_frame": "one sequence's bookkeeping fails that sequence",
    "engine/step.py::StepPipeline._isolated": "a batched call that raises is retried one sequence at a time",
    "engine/step.py::StepPipeline.finish": "the codec of one ending sequence fails that sequence only",
    "text/guard_worker.py::_answer": "a front end bug fails that text; the worker reads the next",
    "runtime/devices.py::place": "a plugin can raise anything; the next device in the plan is the recovery",
    "model/codec_gate.py::build_bf16_tail": "an optional variant never fails a build",
    # reporting: what is broken is exactly what these report
    "commands/doctor.py::run_checks": "a broken OpenVINO install is what the doctor is for",
    "commands/devices.py::devices": "a plugin that does not know a property is shown, not fatal",
    "doctor/platform.py::driver_versions": "a plugin that cannot answer is itself worth showing",
    "servers/metrics.py::ServerMetrics.figures": "/metrics answers whatever the read-out does",
    "servers/__init__.py::Servers._shutdown": "shutdown goes on past a listener that fails to close",
    "servers/renderer/guard.py::RequestGuard.middleware": "per-request isolation: a hostile UPnP request "
    "that trips the library fails alone, as a UPnP error and a log line",
    # library boundaries that raise nothing narrower
    "model/tokenizer.py::_build_tokenizer": "the tokenizers library raises a bare Exception for bad merges",
}


def broad_handlers() -> dict[str, int]:
    """'path::qualified function' -> line of each broad handler that does not re-raise."""
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        _Finder(rel, found).visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


class _Finder(ast.NodeVisitor):
    def __init__(self, rel: str, found: dict[str, int]):
        self.rel, self.found, self.stack = rel, found, []

    def _scope(self, node) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        kinds = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        broad = any(
            k is None or (isinstance(k, ast.Name) and k.id in ("Exception", "BaseException")) for k in kinds
        )
        reraises = isinstance(node.body[-1], ast.Raise) and node.body[-1].exc is None
        if broad and not reraises:
            self.found.setdefault(f"{self.rel}::{'.'.join(self.stack)}", node.lineno)
        self.generic_visit(node)


def test_the_finder_sees_a_broad_handler_and_skips_a_re_raise():
    found: dict[str, int] = {}
    source = "def f():\n  try: g()\n  except Exception: pass\ndef h():\n  try: g()\n  except: tidy(); raise\n"
    _Finder("x.py", found).visit(ast.parse(source))
    assert found == {"x.py::f": 3}


def test_broad_excepts_stand_only_where_the_list_says_why():
    found = broad_handlers()
    assert sorted(set(found) - ALLOWED.keys()) == [], (
        "catch what you expect, or add the place with its reason"
    )


def test_the_list_names_no_place_that_has_none():
    assert sorted(ALLOWED.keys() - set(broad_handlers())) == []
