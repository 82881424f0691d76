"""The layers import one way (STYLE habit 2): a rule for every folder, libraries confined to their adapters,
no cycle between packages or between files.

Every import is seen: absolute, relative (`from . import x`), inside functions, under TYPE_CHECKING, and
`importlib.import_module("...")` with a literal name (a computed name fails the test: nobody could check it).
Exemptions name full paths, never a bare file name.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "daemon" / "qwen3tts"

# unit -> the qwen3tts units it may import (besides itself). A unit is a folder (sub-packages of
# appliance/ are units of their own) or a top-level module.
ALLOWED: dict[str, set[str]] = {
    "errors.py": set(),
    "telemetry.py": set(),
    "__init__.py": {"telemetry.py"},
    "__main__.py": {"cli.py"},
    "appliance": set(),
    "logs.py": set(),
    "settings": {"errors.py"},
    "settings_loader.py": {"errors.py", "settings", "paths.py"},
    "settings_doc.py": {"__init__.py", "settings", "settings_loader.py"},
    "paths.py": {"settings"},
    "tempo.py": set(),
    "steady_clock.py": set(),
    "cli.py": {
        "__init__.py",
        "errors.py",
        "logs.py",
        "paths.py",
        "settings",
        "settings_loader.py",
        "commands",
    },
    "engine": {"errors.py"},
    "text": {"errors.py"},
    "model": {"errors.py", "settings"},
    "runtime": {"model", "engine", "voices", "errors.py", "settings"},
    "voices": {"errors.py", "model", "text"},
    "synthesis.py": {"engine", "text", "voices", "errors.py"},
    "appliance/systemd": set(),
    "appliance/thermal": {"errors.py", "settings"},
    "appliance/audio": {"appliance", "appliance/systemd", "errors.py", "settings"},
    "appliance/zones": {"appliance/audio", "appliance/systemd", "errors.py", "settings"},
    "appliance/announcements": {
        "appliance",  # priority.py: the PA levels every part of the appliance speaks of
        "appliance/audio",
        "appliance/systemd",
        "engine",
        "synthesis.py",
        "tempo.py",  # SSML <prosody rate>: the time-scale modification the HTTP API's speed uses
        "text",
        "voices",
        "errors.py",
        "settings",
    },
    "appliance/mqtt": {
        "appliance",  # priority.py: the PA levels every part of the appliance speaks of
        "appliance/announcements",
        "appliance/systemd",
        "steady_clock.py",  # the deadlines of what the intake accepts
        "engine",
        "synthesis.py",  # check_ssml: every door refuses a bad SSML document the same way
        "text",
        "voices",
        "errors.py",
        "settings",
    },
    "servers": {
        "engine",
        "synthesis.py",
        "text",
        "voices",
        "errors.py",
        "settings",
        "tempo.py",
        "__init__.py",
    },
    "service": {
        "appliance",  # priority.py: the PA levels every part of the appliance speaks of
        "appliance/announcements",
        "appliance/audio",
        "appliance/mqtt",
        "appliance/systemd",
        "appliance/thermal",
        "appliance/zones",
        "servers",
        "runtime",
        "model",
        "engine",
        "synthesis.py",
        "text",
        "voices",
        "errors.py",
        "settings",
        "settings_loader.py",
        "paths.py",
        "logs.py",
        "__init__.py",
        "steady_clock.py",
    },
    "doctor": {
        "appliance/announcements",  # spool.quarantined: what the queue set aside, read as the queue does
        "appliance/audio",
        "appliance/zones",
        "appliance/mqtt",
        "appliance/thermal",
        "servers",
        "runtime",
        "model",
        "errors.py",
        "settings",
        "paths.py",
    },
    "bench": {"model", "runtime", "engine", "errors.py", "settings", "settings_loader.py", "paths.py"},
    "commands": {
        "service",
        "appliance/mqtt",
        "doctor",
        "bench",
        "model",
        "runtime",
        "engine",
        "text",
        "voices",
        "appliance/audio",
        "errors.py",
        "settings",
        "settings_loader.py",
        "settings_doc.py",
        "paths.py",
    },
}

# Third-party libraries that only their adapters may import: library -> full paths (files or folders).
CONFINED: dict[str, tuple[str, ...]] = {
    "openvino": ("model", "runtime", "bench", "doctor/platform.py", "commands/devices.py",
                 "commands/doctor.py", "telemetry.py"),
    "nncf": ("model", "service/embedded.py"),
    "paho": ("appliance/mqtt/client.py", "appliance/mqtt/probe.py", "appliance/mqtt/pool_link.py",
             "appliance/mqtt/pool_rescue.py"),
    "sounddevice": ("appliance/audio/alsa_devices.py",),
    "sdnotify": ("appliance/systemd/notify.py",),
    "wyoming": ("servers",),
    "zeroconf": ("servers",),
    "starlette": ("servers",),
    "uvicorn": ("servers",),
    "prometheus_client": ("servers",),
    "av": ("servers/encoding.py", "servers/renderer/decode.py"),
    "async_upnp_client": ("servers/renderer",),
    "aiohttp": ("servers/renderer",),
    "audiostretchy": ("tempo.py",),
    "torch": (),
    "transformers": (),
    "qwen_tts": (),
}  # fmt: skip


def unit_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    if len(rel.parts) == 1:
        return rel.name
    if rel.parts[0] == "appliance" and len(rel.parts) > 2:
        return f"appliance/{rel.parts[1]}"
    return rel.parts[0]


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = module_files()


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(dotted name, line) of everything `path` imports: modules and `from` targets, relative ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(PACKAGE.parent).parts[:-1])
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
            if len(submodules) < len(node.names):  # names from the module itself (not just its submodules)
                found.append((base, node.lineno))
            found += [(name, node.lineno) for name in submodules]
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            arg = node.args[0] if node.args else None
            name = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "<computed>"
            found.append((name, node.lineno))
    if path == PACKAGE / "cli.py":  # its computed imports name the modules of its COMMANDS table
        found = [f for f in found if f[0] != "<computed>"] + _command_modules()
    return found


def _command_modules() -> list[tuple[str, int]]:
    """cli.py imports each command's module by the name in its COMMANDS table: those are its imports."""
    tree = ast.parse((PACKAGE / "cli.py").read_text(encoding="utf-8"))
    assigned = [(n, n.targets[0] if isinstance(n, ast.Assign) else n.target) for n in tree.body
                if isinstance(n, ast.Assign | ast.AnnAssign)]  # fmt: skip
    table = next(n.value for n, target in assigned if ast.unparse(target) == "COMMANDS")
    return [(value.elts[0].value, value.lineno) for value in table.values]


def _is_dynamic_import(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "import_module":
        return True
    return isinstance(func, ast.Name) and func.id in ("__import__", "import_module")


TOP = PACKAGE / "__init__.py"
"""Every import runs the package's own __init__ (it only turns telemetry off): no dependency to count."""


def internal_targets(path: Path) -> set[Path]:
    """The package files `path` depends on (a `from m import name` depends on m, or on m.name if a module)."""
    targets = set()
    for name, _ in imports_of(path):
        if name in MODULES and MODULES[name] not in (path, TOP):
            targets.add(MODULES[name])
    return targets


def test_every_folder_and_top_level_module_has_a_rule():
    units = {unit_of(p) for p in MODULES.values()}
    assert len(units) > 20, units
    assert units - ALLOWED.keys() == set(), "add a rule for these to ALLOWED"


def test_every_import_follows_the_rule_of_its_folder():
    broken = []
    for path in MODULES.values():
        mine = unit_of(path)
        for target in internal_targets(path):
            theirs = unit_of(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                broken.append(f"{path.relative_to(PACKAGE)} ({mine}) imports {target.relative_to(PACKAGE)}")
    assert broken == []


def test_computed_imports_do_not_exist():
    computed = [
        f"{p.relative_to(PACKAGE)}:{line}" for p in MODULES.values() for name, line in imports_of(p)
        if name == "<computed>"
    ]  # fmt: skip
    assert computed == []


def test_libraries_stay_in_their_adapters():
    broken = []
    for path in MODULES.values():
        rel = path.relative_to(PACKAGE).as_posix()
        for name, line in imports_of(path):
            root = name.split(".")[0]
            if root in CONFINED and not any(rel == a or rel.startswith(a + "/") for a in CONFINED[root]):
                broken.append(f"{rel}:{line} imports {name}")
    assert broken == []


def test_the_confined_paths_exist():
    for allowed in CONFINED.values():
        for rel in allowed:
            assert (PACKAGE / rel).exists(), rel


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; returns the components with more than one member."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def file_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in MODULES.values():
        rel = path.relative_to(PACKAGE).as_posix()
        graph[rel] |= {t.relative_to(PACKAGE).as_posix() for t in internal_targets(path)}
    return graph


def test_the_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_two_files_import_each_other_even_through_others():
    assert strongly_connected(file_graph()) == []


def test_no_two_packages_import_each_other_even_through_others():
    units: dict[str, set[str]] = defaultdict(set)
    for path in MODULES.values():
        units[unit_of(path)] |= {unit_of(t) for t in internal_targets(path)} - {unit_of(path)}
    assert strongly_connected(units) == []
