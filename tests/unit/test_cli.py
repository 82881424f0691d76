"""The `qwen3tts` command line: help, version, settings errors, unavailable commands."""

import subprocess
import sys

import pytest

from qwen3tts import __version__
from qwen3tts.cli import COMMANDS, EXIT_ERROR, main


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "qwen3tts", *args], capture_output=True, text=True, timeout=60
    )


def test_help_lists_every_subcommand():
    result = run_cli("--help")
    assert result.returncode == 0
    for name in ("run", "say", "build", "tiny", "bench", "doctor", "devices"):
        assert name in COMMANDS
        assert f"    {name}" in result.stdout


def test_version_prints_the_package_version():
    result = run_cli("--version")
    assert result.stdout.strip() == f"qwen3tts {__version__}"


def test_every_subcommand_has_its_own_help():
    for name in COMMANDS:
        with pytest.raises(SystemExit) as exit_info:
            main([name, "--help"])
        assert exit_info.value.code == 0


def test_a_bad_override_is_reported_with_its_key_path(capsys):
    assert main(["--set", "engine.max_num_seqs=x", "config"]) == EXIT_ERROR
    assert "engine.max_num_seqs: expected an integer" in capsys.readouterr().err


def test_config_prints_the_effective_settings(capsys):
    assert main(["--set", "engine.max_num_seqs=3", "config"]) == 0
    assert "max_num_seqs: 3" in capsys.readouterr().out
