"""Field docstrings of the settings package, and the commented default YAML rendered from them.

config/qwen3tts.yaml is this rendering, committed; a test keeps the two identical so the file
shipped to /etc never drifts from the code.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from qwen3tts import settings as settings_module
from qwen3tts.settings import Settings
from qwen3tts.settings_loader import settings_to_dict


@cache
def _docs_by_class() -> dict[str, dict[str, str]]:
    """{class name: {field name: docstring}} from the attribute docstrings in the settings package."""
    result: dict[str, dict[str, str]] = {}
    for node in _class_nodes():
        docs: dict[str, str] = {}
        body = node.body
        for stmt, nxt in zip(body, [*body[1:], None], strict=True):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                is_doc = (
                    isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                )
                if is_doc:
                    docs[stmt.target.id] = " ".join(nxt.value.value.split())
        result[node.name] = docs
    return result


def _class_nodes() -> list[ast.ClassDef]:
    """The class definitions of every module of the settings package (one section per file)."""
    folder = Path(settings_module.__file__).parent
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.py"))]
    return [node for tree in trees for node in tree.body if isinstance(node, ast.ClassDef)]


def field_doc(cls: type, name: str) -> str | None:
    """The docstring written under field `name` of settings dataclass `cls`, or None."""
    return _docs_by_class().get(cls.__name__, {}).get(name)


def render_default_yaml() -> str:
    """The default configuration as YAML with every key commented by its docstring."""
    defaults = Settings()
    lines = [
        "# qwen3tts configuration. Every key is optional; the values shown are the defaults.",
        "# Override one key on the command line with: qwen3tts --set section.key=value ...",
        "# Secrets (the MQTT password) are never read from this file: see mqtt.password_file.",
    ]
    for section in dataclasses.fields(Settings):
        value = getattr(defaults, section.name)
        if isinstance(value, tuple):  # a list of sections (zones): empty by default, one entry shown
            lines += ["", f"# {field_doc(Settings, section.name)}", f"{section.name}: []"]
            lines += _example_entry(section.name)
            continue
        lines += ["", f"# {inspect.getdoc(type(value))}", f"{section.name}:"]
        lines += _section_lines(value, "  ")
    return "\n".join(lines) + "\n"


def _example_entry(name: str) -> list[str]:
    """One entry of a list of sections, every key commented out with its doc: what a user copies."""
    item_type = typing.get_args(typing.get_type_hints(Settings)[name])[0]
    lines = [f"# {inspect.getdoc(item_type)} Each entry has these keys:", f"# {name}:"]
    entry = _section_lines(item_type(), "    ")
    entry[1] = "  - " + entry[1].lstrip()
    return lines + ["#" + line[1:] if line.startswith("  ") else "# " + line for line in entry]


def _section_lines(section: Any, indent: str) -> list[str]:
    """Commented `key: value` lines of one section; a nested section (servers.http) is indented below."""
    lines = []
    plain = settings_to_dict(section)
    for item in dataclasses.fields(section):
        value = getattr(section, item.name)
        lines.append(f"{indent}# {field_doc(type(section), item.name) or ''}")
        if dataclasses.is_dataclass(value):
            lines.append(f"{indent}{item.name}:")
            lines += _section_lines(value, indent + "  ")
        else:
            lines.append(f"{indent}{item.name}: {_yaml_scalar(plain[item.name])}")
    return lines


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    return (
        yaml.safe_dump(value, default_flow_style=True, allow_unicode=True).strip().removesuffix("...").strip()
    )
