"""The native library the runtime tests run, loaded once per module (scripts/setup.sh builds it)."""

from __future__ import annotations

import pytest

from qwen3tts.runtime.native import DEFAULT_LIBRARY, load_library


@pytest.fixture(scope="module")
def library():
    found = load_library()
    assert found is not None, f"{DEFAULT_LIBRARY} is missing: scripts/setup.sh builds it"
    return found
