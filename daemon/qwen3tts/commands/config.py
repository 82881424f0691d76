"""`qwen3tts config`: print the effective configuration, or the commented default file."""

from __future__ import annotations

import argparse

import yaml

from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--default", action="store_true", help="print the commented default config file")


def config(args: argparse.Namespace, settings: Settings) -> int:
    if args.default:
        from qwen3tts.settings_doc import render_default_yaml

        print(render_default_yaml(), end="")
        return 0
    from qwen3tts.settings_loader import settings_to_dict

    print(yaml.safe_dump(settings_to_dict(settings), sort_keys=False, allow_unicode=True), end="")
    return 0
