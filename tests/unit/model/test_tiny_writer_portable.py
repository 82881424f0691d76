"""`qwen3tts tiny` writes the same bytes on every CPU: no OpenVINO takes part in writing a checkpoint.

OpenVINO's CPU kernels differ in their last bits between instruction sets (AVX2 vs AVX-512), so a
checkpoint whose bytes came from an OpenVINO inference would differ between machines, and the golden
fixtures (tests/fixtures/golden/, recorded with the checkpoint sha256s) would fail elsewhere. Here the
command runs in a child process in which `import openvino` raises, and must still write exactly the
bytes the golden index recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
INDEX = json.loads((REPO / "tests" / "fixtures" / "golden" / "index.json").read_text(encoding="utf-8"))

# Runs `qwen3tts <args>` with an import hook that refuses openvino (and says so on stderr).
_WITHOUT_OPENVINO = textwrap.dedent(
    """
    import sys

    class RefuseOpenVINO:
        def find_spec(self, name, path=None, target=None):
            if name == "openvino" or name.startswith("openvino."):
                print(f"SENTINEL: something imported {name}", file=sys.stderr)
                raise ImportError(f"{name} is not importable while a checkpoint is written")
            return None

    sys.modules.pop("openvino", None)
    sys.meta_path.insert(0, RefuseOpenVINO())
    if sys.argv[1] == "--import":
        __import__(sys.argv[2])
        sys.exit(0)
    from qwen3tts.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _run_without_openvino(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "daemon"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_OPENVINO, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_the_sentinel_refuses_openvino():
    # the guard below can fail: a module that needs OpenVINO does not import under the sentinel
    result = _run_without_openvino("--import", "qwen3tts.model.graphs.codec")
    assert result.returncode != 0
    assert "SENTINEL: something imported openvino" in result.stderr


def test_qwen3tts_tiny_writes_the_golden_bytes_without_openvino(tmp_path):
    # the Base tiny checkpoint: a talker, a code predictor, a speaker encoder and a speech tokenizer
    name = next(n for n, c in sorted(INDEX["checkpoints"].items()) if c["variant"] == "base")
    recorded = INDEX["checkpoints"][name]
    out = tmp_path / name
    result = _run_without_openvino(
        "tiny", str(out), "--variant", recorded["variant"], "--shape", recorded["shape"],
        "--seed", str(recorded["seed"]),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "SENTINEL" not in result.stderr, result.stderr
    written = {
        path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }
    assert written == recorded["files"], "the checkpoint differs from the one the golden fixtures came from"
