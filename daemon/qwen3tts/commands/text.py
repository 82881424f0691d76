"""`qwen3tts text "..."`: what the model will get for a text: pieces, normalised form, language.

An operator checks a lexicon entry, a tricky announcement or an SSML document here without
synthesising anything: each piece with what the model says, the marks SSML put on it (silence,
language, voice, rate, emphasis, chime) and the warnings an event would carry.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", help="the announcement text ('-' reads it from standard input)")
    parser.add_argument(
        "--language", default=None, help="model name, ISO 639-1 or BCP 47 tag, or auto (default: auto)"
    )
    parser.add_argument(
        "--lexicon", type=Path, metavar="FILE", help="site lexicon YAML (default: text.lexicon)"
    )
    parser.add_argument(
        "--no-normalize", action="store_true", help="apply only the lexicon, as for normalize: false"
    )
    parser.add_argument(
        "--bundle", type=Path, metavar="DIR", help="take the languages from this bundle's manifest"
    )
    ssml = parser.add_mutually_exclusive_group()
    ssml.add_argument("--ssml", dest="ssml", action="store_const", const=True, help="read TEXT as SSML")
    ssml.add_argument(
        "--no-ssml", dest="ssml", action="store_const", const=False, help="read TEXT as plain text"
    )
    parser.set_defaults(ssml=None)  # auto: SSML when the text starts with <speak
    parser.add_argument("--json", action="store_true", help='print {"language": ..., "pieces": [...]}')


def text(args: argparse.Namespace, settings: Settings) -> int:
    import sys

    from qwen3tts.text import MODEL_LANGUAGES, Lexicon, prepare

    source = sys.stdin.read() if args.text == "-" else args.text
    lexicon_path = args.lexicon or settings.text.lexicon
    lexicon = Lexicon.load(lexicon_path) if lexicon_path else None
    supported = _bundle_languages(args.bundle) if args.bundle else MODEL_LANGUAGES
    normalize = settings.text.normalize and not args.no_normalize
    prepared = prepare(
        source, args.language, normalize=normalize, lexicon=lexicon, supported=supported, ssml=args.ssml
    )
    if args.json:
        document = {
            "language": prepared.language,
            "detected": prepared.detected,
            "ssml": prepared.ssml,
            "pieces": [_piece_json(piece) for piece in prepared.pieces],
            "warnings": list(prepared.warnings),
        }
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return 0
    lexicon_note = f", lexicon {lexicon.source} ({len(lexicon)} entries)" if lexicon else ""
    print(
        f"language: {prepared.language} (normalised as {prepared.detected}"
        f"{'' if normalize else ', normalisation off'}{', SSML' if prepared.ssml else ''}{lexicon_note})"
    )
    for number, piece in enumerate(prepared.pieces, 1):
        print(f"{number:>3}  text:       {piece.text}")
        print(f"     normalized: {piece.normalized}")
        marks = _marks(piece)
        if marks:
            print(f"     marks:      {', '.join(f'{key} {value}' for key, value in marks.items())}")
    for warning in prepared.warnings:
        print(f"warning: {warning}")
    return 0


def _marks(piece) -> dict[str, object]:
    """The marks that differ from plain text's (SSML's), in a fixed order."""
    defaults = {
        "silence_before_ms": 0,
        "silence_after_ms": 0,
        "language": None,
        "voice": None,
        "rate": 1.0,
        "emphasis": None,
        "chime": None,
    }
    return {key: getattr(piece, key) for key, default in defaults.items() if getattr(piece, key) != default}


def _piece_json(piece) -> dict[str, object]:
    return {"text": piece.text, "normalized": piece.normalized, **_marks(piece)}


def _bundle_languages(bundle: Path) -> tuple[str, ...]:
    from qwen3tts.model.bundle import read_manifest

    return tuple(read_manifest(bundle, verify_files=False).spec.languages)
