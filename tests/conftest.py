"""Shared fixtures for the whole suite."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# tests/ is not a package; test modules import shared helpers from tests/support/ by module name.
sys.path.insert(0, str(REPO / "tests" / "support"))

from bundles import TinyModels  # noqa: E402


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> TinyModels:
    """Tiny release-layout checkpoints and their bundles, each written once per session."""
    return TinyModels(tmp_path_factory.mktemp("tiny-models"))
