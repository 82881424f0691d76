"""One module per `qwen3tts` subcommand: `add_arguments(parser)` and the command function.

Heavy imports (OpenVINO, paho, sounddevice) happen inside the command functions, never at module
level, because the CLI imports every command module to build `--help`.
"""
