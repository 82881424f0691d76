"""constraints.txt pins every Python package the project installs, each within the range pyproject.toml
allows, and the venv the tests run in holds those versions: CI and the Debian package install what the
suite ran on, not whatever was published upstream since (PyPI's PyAV 18.1.1 once failed CI that way)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as canonical

REPO = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, separator, version = line.partition("==")
        assert separator and version and not re.search(r"[<>=!~,; ]", version), f"not an exact pin: {line!r}"
        assert canonical(name) not in found, f"pinned twice: {name}"
        found[canonical(name)] = version
    return found


def declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [Requirement(r) for r in (*project["dependencies"], *extras)]


def test_every_declared_dependency_is_pinned_within_its_range():
    pinned = pins()
    for requirement in declared():
        name = canonical(requirement.name)
        assert name in pinned, f"{requirement} has no pin in constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"constraints.txt pins {name}=={pinned[name]}, outside pyproject.toml's {requirement}"
        )


def test_every_dependency_of_the_installed_project_is_pinned_and_installed_at_its_pin():
    """Walks the installed requirements from qwen3tts[dev] down: a new transitive dependency, or a venv
    upgraded by hand, shows here rather than as a difference between this machine and CI."""
    pinned, seen, todo = pins(), set(), [("qwen3tts", "dev")]
    while todo:
        name, extra = todo.pop()
        distribution = importlib.metadata.distribution(name)
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
                continue
            key = canonical(requirement.name)
            if key in seen:
                continue
            seen.add(key)
            assert key in pinned, f"{requirement.name} (needed by {name}) has no pin in constraints.txt"
            installed = importlib.metadata.version(requirement.name)
            assert installed == pinned[key], (
                f"{requirement.name} {installed} is installed, constraints.txt pins {pinned[key]}: "
                "run scripts/setup.sh"
            )
            todo.append((requirement.name, ""))
    assert {"openvino", "numpy", "pytest"} <= seen
