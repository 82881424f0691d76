"""The `qwen3tts` command: parse arguments, load settings, dispatch to one subcommand.

Subcommand bodies live with the code they drive (model/, runtime/, appliance/) and are imported
lazily, so `qwen3tts --help` answers at once even where importing OpenVINO takes a second.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Iterable
from pathlib import Path

from qwen3tts import __version__
from qwen3tts.errors import NotAvailableError, Qwen3TTSError
from qwen3tts.logs import set_level, setup_logging, stderr_line

log = logging.getLogger("qwen3tts")

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_AVAILABLE = 3

# subcommand -> (module, function, one-line help). The function takes (args, settings) -> int.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("qwen3tts.commands.run", "run", "run the appliance daemon (MQTT in, audio out)"),
    "say": ("qwen3tts.commands.say", "say", "synthesise one text to a WAV file or the audio sink"),
    "build": ("qwen3tts.commands.build", "build", "turn a release checkpoint into an OpenVINO bundle"),
    "tiny": ("qwen3tts.commands.tiny", "tiny", "write a random checkpoint in the release layout"),
    "inspect": ("qwen3tts.commands.inspect", "inspect", "describe a checkpoint or bundle directory"),
    "bench": ("qwen3tts.commands.bench", "bench", "measure speed, latency and memory of a bundle"),
    "doctor": (
        "qwen3tts.commands.doctor",
        "doctor",
        "check OpenVINO, devices, bundle, spool, broker, audio, heat",
    ),
    "devices": ("qwen3tts.commands.devices", "devices", "print the OpenVINO device plan and properties"),
    "config": ("qwen3tts.commands.config", "config", "print the effective or the default configuration"),
    "text": ("qwen3tts.commands.text", "text", "print what the model gets: pieces, words, language"),
    "voice": ("qwen3tts.commands.voice", "voice", "add, list or remove named voices (cloned or designed)"),
    "fleet": ("qwen3tts.commands.fleet", "fleet", "list the boxes on the broker: state, queue, pool"),
}


def build_parser(declared: Iterable[str] = tuple(COMMANDS)) -> argparse.ArgumentParser:
    """The command line, with the options of the `declared` subcommands (the others are listed, with
    their help line, but their modules are not imported)."""
    parser = argparse.ArgumentParser(
        prog="qwen3tts",
        description="Voice-appliance daemon: text published on MQTT is spoken by Qwen3-TTS on OpenVINO.",
        epilog="Run `qwen3tts COMMAND --help` for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"qwen3tts {__version__}")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="YAML configuration file (default: $QWEN3TTS_CONFIG, else /etc/qwen3tts/qwen3tts.yaml if any)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override one setting, e.g. --set engine.max_num_seqs=2 (repeatable)",
    )
    parser.add_argument("--debug", action="store_true", help="log at DEBUG level with tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, _, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name in declared:
            _add_arguments(module_name, command_parser)
    return parser


def command_in(argv: list[str]) -> str | None:
    """The subcommand `argv` names, found without parsing it: the first word that is not an option or
    the value of one (`--config FILE`, `--set KEY=VALUE`). None when there is none: the whole parser
    then says what is missing."""
    words = iter(argv)
    for word in words:
        if word in ("--config", "--set"):
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _add_arguments(module_name: str, parser: argparse.ArgumentParser) -> None:
    """Each command module declares its own options in `add_arguments(parser)`."""
    module = importlib.import_module(module_name)
    module.add_arguments(parser)


def main(argv: list[str] | None = None) -> int:
    # Only the subcommand's own module is imported to parse its options: importing them all (the text
    # front end, OpenVINO) cost every command half a second before it began.
    argv = sys.argv[1:] if argv is None else argv
    command = command_in(argv)
    args = build_parser([command] if command else []).parse_args(argv)
    setup_logging(logging.DEBUG if args.debug else logging.INFO)
    try:
        from qwen3tts.paths import default_config
        from qwen3tts.settings_loader import load_settings

        settings = load_settings(args.config or default_config(), args.overrides)
        if not args.debug:
            set_level(settings.logging.level)
        module_name, function_name, _ = COMMANDS[args.command]
        command = getattr(importlib.import_module(module_name), function_name)
        return int(command(args, settings) or 0)
    except NotAvailableError as exc:
        print(stderr_line(f"qwen3tts {args.command}: not available yet: {exc}"), file=sys.stderr)
        return EXIT_NOT_AVAILABLE
    except Qwen3TTSError as exc:
        if args.debug:  # the traceback, once; the line below would repeat its last line
            log.exception("%s failed", args.command)
        else:
            print(stderr_line(f"qwen3tts {args.command}: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
