"""Shared fixtures for the whole suite."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# tests/ is not a package; let test modules import shared helpers living in tests/support/.
sys.path.insert(0, str(REPO / "tests" / "support"))
