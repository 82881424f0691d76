"""Imported once by the text front end's forkserver (guard.py), never by the daemon itself.

Importing it loads the whole front end and builds the language detector for the model's languages
(about two seconds and 100 MB), so that every worker forked from the forkserver, also the one that
replaces a killed worker, starts warm and shares those pages instead of building its own.
"""

from qwen3tts.text import guard_worker  # noqa: F401  (the workers' code: imported here, once)
from qwen3tts.text.detect import warm_up
from qwen3tts.text.languages import MODEL_LANGUAGES

warm_up(MODEL_LANGUAGES)
