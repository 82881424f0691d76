"""`qwen3tts bench`: not available yet (see the open issues)."""

from __future__ import annotations

import argparse

from qwen3tts.errors import NotAvailableError
from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options yet."""


def bench(args: argparse.Namespace, settings: Settings) -> int:
    raise NotAvailableError("this command is being built; track it in the project's issues")
