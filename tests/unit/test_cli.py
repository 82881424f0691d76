"""The `qwen3tts` command line: help, version, settings errors, unavailable commands."""

import subprocess
import sys

import pytest

from qwen3tts import __version__
from qwen3tts.cli import COMMANDS, EXIT_ERROR, command_in, main


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


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["run"], "run"),
        (["--debug", "say", "hello"], "say"),
        (["--config", "run", "doctor"], "doctor"),  # a configuration file that happens to be called "run"
        (["--config=run", "--set", "engine.max_frames=4", "tiny", "out"], "tiny"),
        (["--version"], None),
        (["speak", "hello"], None),  # argparse names the unknown command
    ],
)
def test_the_subcommand_is_found_before_parsing(argv, command):
    assert command_in(argv) == command


@pytest.mark.parametrize(("argv", "imported"), [(["--version"], []), (["doctor", "--help"], ["doctor"])])
def test_only_the_named_subcommands_module_is_imported_to_parse_the_line(argv, imported):
    script = (
        "import sys\nfrom qwen3tts.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m.split('.')[-1] for m in sys.modules if m.startswith('qwen3tts.commands.')))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == repr(imported), result.stderr
