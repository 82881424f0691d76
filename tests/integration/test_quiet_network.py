"""OpenVINO's usage telemetry stays off wherever our code imports OpenVINO (issue: quiet on the network).

Each case runs a fresh interpreter with HOME in a tmp dir, so what OpenVINO's telemetry would write
(~/intel/stats, ~/intel/openvino_ga_cid) is visible. Any analytics request the control case makes
goes to a proxy on a closed loopback port: nothing leaves the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEAD_PROXY = "http://127.0.0.1:9"  # discard port, nothing listens: the request fails locally


def run_python(code: str, home: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": str(REPO / "daemon"),
        "https_proxy": DEAD_PROXY,
        "http_proxy": DEAD_PROXY,
        "HTTPS_PROXY": DEAD_PROXY,
        "HTTP_PROXY": DEAD_PROXY,
        "no_proxy": "",
        "NO_PROXY": "",
    }
    for ci_marker in ("CI", "TF_BUILD", "JENKINS_URL", "NNCF_CI", "NNCF_DEV"):  # these switch it off too
        env.pop(ci_marker, None)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    )


def files_under(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*"))


def test_plain_openvino_writes_telemetry_files_so_the_check_below_can_fail(tmp_path):
    run_python("import openvino", tmp_path)
    assert "intel/stats" in files_under(tmp_path)


def test_importing_openvino_and_nncf_through_qwen3tts_writes_nothing_and_loads_no_telemetry(tmp_path):
    result = run_python(
        "import sys, multiprocessing, qwen3tts, openvino, nncf\n"
        "print(sys.modules.get('openvino_telemetry'), len(multiprocessing.active_children()))",
        tmp_path,
    )
    assert result.stdout.split() == ["None", "0"]
    assert files_under(tmp_path) == []


def test_the_cli_leaves_no_telemetry_files(tmp_path):
    env_code = "import sys; from qwen3tts.cli import main; sys.exit(main(['devices']))"
    run_python(env_code, tmp_path)
    assert not (tmp_path / "intel").exists()
