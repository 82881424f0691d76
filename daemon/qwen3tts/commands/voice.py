"""`qwen3tts voice add|list|remove`: the operator's named voices (voices/registry.py).

`voice add NAME --audio FILE --text "transcript"` clones a voice for a Base bundle: the recording is
read (any common format), resampled to 24 kHz with soxr, and its x-vector computed once with the
bundle's speaker encoder, exactly as `say --ref-audio` does per request, and (with `--text`) its
reference codes with the speech-tokenizer encoder, so the daemon speaks it by in-context learning
(ICL). `--x-vector-only` stores the x-vector alone and leaves the transcript out of the prompt.
`voice add NAME --instruct "description"` saves a VoiceDesign description under a name. Either way
the voice is tied to the bundle's hash. The checks and the work are runtime/voice_maker.py's, which the
status page's voice form uses too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from qwen3tts.settings import Settings
from qwen3tts.voices.registry import VoiceRegistry, bundle_hash, voices_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, help="registry directory (default: 'voices' beside the spool)")
    sub = parser.add_subparsers(dest="voice_command", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="add a named voice from reference audio or a description")
    add.add_argument("name", help="voice name: 1-64 letters, digits, '.', '_', '-'")
    source = add.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--audio", type=Path, help="reference recording (a regular WAV, FLAC, Ogg, ... file; 1-30 s)"
    )
    source.add_argument("--instruct", help="VoiceDesign description of the voice")
    add.add_argument(
        "--text", help="transcript of the recording, at most 1,000 characters (needed unless --x-vector-only)"
    )
    add.add_argument("--x-vector-only", action="store_true", help="clone from the x-vector alone (no ICL)")
    add.add_argument("--replace", action="store_true", help="overwrite an existing voice of that name")
    add.add_argument("--bundle", type=Path, help="bundle directory (default: model.bundle setting)")
    sub.add_parser("list", help="list the named voices and whether they fit the configured bundle")
    remove = sub.add_parser("remove", help="delete a named voice")
    remove.add_argument("name")


def voice(args: argparse.Namespace, settings: Settings) -> int:
    registry = VoiceRegistry(args.dir or voices_dir(settings))
    if args.voice_command == "list":
        return _list(registry, settings)
    if args.voice_command == "remove":
        registry.remove(args.name)
        print(f"removed voice {args.name}")
        return 0
    return _add(args, registry, settings)


def _list(registry: VoiceRegistry, settings: Settings) -> int:
    names = registry.names()
    if not names:
        print(f"no voices in {registry.directory}")
        return 0
    current = (
        bundle_hash(settings.model.bundle) if (settings.model.bundle / "manifest.json").is_file() else None
    )
    usable = set(registry.names(current)) if current else set()
    for name in names:
        print(f"{name}\t{'' if name in usable else '(made for another bundle)'}".rstrip())
    return 0


def _add(args: argparse.Namespace, registry: VoiceRegistry, settings: Settings) -> int:
    from qwen3tts.runtime.voice_maker import VoiceOrder, make_voice

    order = VoiceOrder(args.name, audio=args.audio, text=args.text, instruct=args.instruct,
                       x_vector_only=args.x_vector_only, replace=args.replace)  # fmt: skip
    bundle_dir = args.bundle or settings.model.bundle
    voice = make_voice(order, registry, bundle_dir, settings)
    codes = "none" if voice.ref_codes is None else f"{len(voice.ref_codes)} frames"
    print(f"added voice {voice.name} ({voice.kind}, bundle {voice.bundle_hash[:12]}, "
          f"reference codes: {codes})")  # fmt: skip
    return 0
