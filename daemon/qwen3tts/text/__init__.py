"""The text front end: the one place where an announcement's text becomes the model's input.

    prepared = prepare(text, language="en-GB", normalize=True, lexicon=Lexicon.load(path))
    for piece in prepared.pieces:
        engine.submit(Request(text=piece.normalized, language=prepared.language, ...))

Splitting (splitter.py), the site lexicon (lexicon.py), normalisation per language (normalize/),
language tags (languages.py) and detection for `auto` (detect.py).
"""

from qwen3tts.text.detect import detect_language, warm_up
from qwen3tts.text.languages import MODEL_LANGUAGES, resolve_language
from qwen3tts.text.lexicon import Lexicon, reload_lexicon
from qwen3tts.text.prepare import Piece, Prepared, prepare

__all__ = [
    "MODEL_LANGUAGES",
    "Lexicon",
    "Piece",
    "Prepared",
    "detect_language",
    "prepare",
    "reload_lexicon",
    "resolve_language",
    "warm_up",
]
