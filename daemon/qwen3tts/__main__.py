"""`python -m qwen3tts` is the `qwen3tts` command."""

import sys

from qwen3tts.cli import main

if __name__ == "__main__":  # not when a worker process (text/guard.py) imports the main module again
    sys.exit(main())
