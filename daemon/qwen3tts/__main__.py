"""`python -m qwen3tts` is the `qwen3tts` command."""

import sys

from qwen3tts.cli import main

sys.exit(main())
