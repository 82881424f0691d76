"""`qwen3tts voice add|list|remove`: the operator's named voices (voices/registry.py).

`voice add NAME --audio FILE --text "transcript"` clones a voice for a Base bundle: the recording is
read (any common format), resampled to 24 kHz with soxr, and its x-vector computed once with the
bundle's speaker encoder, exactly as `say --ref-audio` does per request, and (with `--text`) its
reference codes with the speech-tokenizer encoder, so the daemon speaks it by in-context learning
(ICL). `--x-vector-only` stores the x-vector alone and leaves the transcript out of the prompt.
`voice add NAME --instruct "description"` saves a VoiceDesign description under a name. Either way
the voice is tied to the bundle's hash.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from qwen3tts.settings import Settings
from qwen3tts.voices.registry import RegisteredVoice, VoiceError, VoiceRegistry, bundle_hash, voices_dir


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
    from qwen3tts.model.bundle import read_manifest
    from qwen3tts.voices.registry import validate_name, validate_transcript

    name = validate_name(args.name)  # before any expensive work
    if args.text is not None:
        args.text = validate_transcript(args.text)
    if args.instruct is not None:
        args.instruct = _checked_instruct(args.instruct)
    if (registry.directory / name).exists() and not args.replace:
        raise VoiceError(f"voice {name!r} exists; remove it first or pass --replace")
    bundle_dir = args.bundle or settings.model.bundle
    manifest = read_manifest(bundle_dir)
    spec, digest = manifest.spec, bundle_hash(bundle_dir)
    if args.instruct is not None:
        if args.text or args.x_vector_only:
            raise VoiceError("--text and --x-vector-only go with --audio, not with --instruct")
        if not args.instruct.strip():
            raise VoiceError("--instruct must describe the voice")
        if not spec.supports_instruct:
            raise VoiceError(f"a {spec.size} {spec.variant} bundle takes no voice description")
        voice = RegisteredVoice(name, "design", digest, instruct=args.instruct.strip())
    else:
        if spec.speaker_encoder is None:
            raise VoiceError(f"cloning from audio needs a Base bundle; this one is {spec.variant}")
        if not args.x_vector_only and not args.text:
            raise VoiceError("--text (the transcript of the recording) is needed unless --x-vector-only")
        voice = _clone(name, args, bundle_dir, digest, settings)
    registry.add(voice, replace=args.replace)
    codes = "none" if voice.ref_codes is None else f"{len(voice.ref_codes)} frames"
    print(f"added voice {name} ({voice.kind}, bundle {digest[:12]}, reference codes: {codes})")
    return 0


def _clone(name: str, args, bundle_dir: Path, digest: str, settings: Settings) -> RegisteredVoice:
    from qwen3tts.model import bundle as layout
    from qwen3tts.runtime.parts import PartCompiler
    from qwen3tts.runtime.speaker import SAMPLE_RATE, SpeakerEncoder, resample_to_speaker_rate
    from qwen3tts.voices.reference_audio import read_reference_audio

    wave, rate = read_reference_audio(args.audio)
    wave24 = resample_to_speaker_rate(wave, rate)  # (n,) f32 at 24 kHz, as the official soxr_hq path
    compiler = PartCompiler(settings.devices, settings.model.cache_dir)
    compiled, _ = compiler.compile(
        "speaker_encoder", compiler.read(bundle_dir / layout.SPEAKER_ENCODER_XML), ("CPU",)
    )
    xvector = SpeakerEncoder(compiled).xvector(wave24, SAMPLE_RATE)
    ref_codes = None if args.x_vector_only else encode_reference_codes(bundle_dir, settings, wave24)
    return RegisteredVoice(
        name,
        "clone",
        digest,
        x_vector_only=args.x_vector_only,
        ref_text=None if args.x_vector_only else args.text,
        xvector=xvector,
        ref_audio=wave24,
        ref_codes=ref_codes,
    )


def _checked_instruct(instruct: str) -> str:
    """A VoiceDesign description: UTF-8 text of at most MAX_TRANSCRIPT_CHARS, like a transcript."""
    from qwen3tts.voices.registry import MAX_TRANSCRIPT_CHARS

    try:
        instruct.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise VoiceError(f"--instruct is not valid UTF-8 (at character {exc.start})") from None
    if len(instruct) > MAX_TRANSCRIPT_CHARS:
        raise VoiceError(f"--instruct is {len(instruct)} characters; at most {MAX_TRANSCRIPT_CHARS}")
    return instruct


def encode_reference_codes(bundle_dir: Path, settings: Settings, wave24: np.ndarray) -> np.ndarray | None:
    """(frames, 16) i64 codes of the 24 kHz reference from the bundle's speech-tokenizer encoder (ICL).

    The same encoder the runtime's VoiceEncoder runs for `say --ref-audio --ref-text`. A bundle built
    before it had the encoder returns None: the voice is stored with its transcript, speaks from its
    x-vector, and gets codes when added again after a rebuild.
    """
    from qwen3tts.model import bundle as layout
    from qwen3tts.runtime.parts import PartCompiler
    from qwen3tts.runtime.speaker import SAMPLE_RATE
    from qwen3tts.runtime.speech_encoder import SpeechEncoder

    if not (bundle_dir / layout.SPEECH_ENCODER_XML).is_file():
        print("warning: this bundle has no speech encoder; rebuild it for ICL cloning (x-vector used)")
        return None
    compiler = PartCompiler(settings.devices, settings.model.cache_dir)
    compiled, _ = compiler.compile(
        "speech_encoder", compiler.read(bundle_dir / layout.SPEECH_ENCODER_XML), ("CPU",)
    )
    return SpeechEncoder(compiled).encode(wave24, SAMPLE_RATE)
