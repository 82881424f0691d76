"""OpenVINO's usage telemetry stays off: the appliance talks to its broker and nothing else.

`import openvino` (2026.x) imports its model-conversion tools, which start a telemetry session: it
writes ~/intel/stats and ~/intel/openvino_ga_cid and forks a child process that posts an "import"
event to an analytics host, unless a consent file ~/intel/openvino_telemetry says "0" (the default
is opt-out) or the environment looks like CI. nncf (used by `build`) does the same. Both fall back to
their own no-op stubs when the `openvino_telemetry` package cannot be imported, so we make it
unimportable for this process: no file written into a home directory, no opt-in prompt, no child
process, no environment variable that could change other libraries' behaviour. This must run
before OpenVINO is imported; `qwen3tts/__init__.py` calls it.
"""

from __future__ import annotations

import sys

TELEMETRY_PACKAGE = "openvino_telemetry"


def block_openvino_telemetry() -> bool:
    """Make `import openvino_telemetry` fail in this process; False if it was already imported (too late)."""
    if sys.modules.get(TELEMETRY_PACKAGE) is not None:
        return False
    sys.modules[TELEMETRY_PACKAGE] = None  # type: ignore[assignment] - None makes the import raise ImportError
    return True
