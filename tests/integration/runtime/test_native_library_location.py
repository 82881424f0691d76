"""Where runtime/native.py finds libqwen3tts_native.so without configuration: a checkout's native/build/,
else qwen3tts/lib/ beside the package, where the Debian package installs it (`cmake --install`, as
packaging/debian/rules runs it). A copy of the qwen3tts package in a site-packages-like directory of its
own stands for an installed venv: it has no source tree around it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qwen3tts.runtime.native import LIBRARY_NAME, SOURCE_TREE_LIBRARY, load_library

PACKAGE = Path(__file__).resolve().parents[3] / "daemon" / "qwen3tts"
FIND = (
    "import logging; logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
    "from qwen3tts.runtime.native import load_library\n"
    "found = load_library()\n"
    "print(found and found.path, found and found.isa)\n"
)


@pytest.fixture()
def site(tmp_path) -> Path:
    """site/qwen3tts: the package alone, as a venv's site-packages holds it."""
    assert SOURCE_TREE_LIBRARY.is_file(), f"{SOURCE_TREE_LIBRARY} is missing: scripts/setup.sh builds it"
    site = tmp_path / "venv" / "site-packages"
    shutil.copytree(PACKAGE, site / "qwen3tts", ignore=shutil.ignore_patterns("__pycache__", "lib"))
    return site


def _find(site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", FIND], env=env, capture_output=True, text=True, check=True)


def test_the_installed_library_is_found_beside_the_package_with_its_rpath_relative(site):
    build = SOURCE_TREE_LIBRARY.parent
    subprocess.run(
        ["cmake", "--install", str(build), "--strip", "--prefix", str(site)], check=True, capture_output=True
    )
    installed = site / "qwen3tts" / "lib" / LIBRARY_NAME
    dynamic = subprocess.run(
        ["readelf", "-d", str(installed)], capture_output=True, text=True, check=True
    ).stdout
    assert "[$ORIGIN/../../openvino/libs]" in dynamic, dynamic  # the wheel's libraries, wherever the venv is
    found = _find(site)
    path, isa = found.stdout.split()
    assert Path(path) == installed
    assert isa == load_library().isa  # the same kernel set as the checkout's build on this CPU


def test_without_the_library_the_one_log_line_names_the_missing_file(site):
    found = _find(site)
    assert found.stdout.split() == ["None", "None"]
    lines = [line for line in found.stderr.splitlines() if line.startswith("native kernels:")]
    assert len(lines) == 1, found.stderr
    assert lines[0].startswith("native kernels: not built: neither "), lines[0]
    assert str(site.parent / "native" / "build" / LIBRARY_NAME) in lines[0]  # where a checkout builds it
    assert str(site / "qwen3tts" / "lib" / LIBRARY_NAME) in lines[0]  # where the package installs it
