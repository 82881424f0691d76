"""Making a named voice (voices/registry.py): the one path `qwen3tts voice add` and the status page share.

`make_voice(order, registry, bundle_dir, settings)` checks what an operator gave (the name, the transcript
or description, then the bundle's kind) before any expensive work, reads the recording with every check of
voices/reference_audio.py, resamples it to 24 kHz with soxr, computes its x-vector once with the bundle's
speaker encoder (as `say --ref-audio` does per request) and, with a transcript, its reference codes with
the speech-tokenizer encoder (ICL), then stores the voice tied to the bundle's hash. A description
(`instruct`) makes a VoiceDesign voice instead. Each refusal is a VoiceError or AudioError naming the
problem; nothing is stored unless everything passed.

The encoders are compiled here for the one voice (from the compile cache when there is one): the running
daemon's own infer requests belong to its engine thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwen3tts.settings import Settings
from qwen3tts.voices.registry import (
    MAX_TRANSCRIPT_CHARS,
    RegisteredVoice,
    VoiceError,
    VoiceRegistry,
    bundle_hash,
    validate_name,
    validate_transcript,
)


@dataclass(frozen=True)
class VoiceOrder:
    """What an operator asked for: a clone from `audio` (+ `text`, unless `x_vector_only`) or a
    VoiceDesign voice from `instruct`."""

    name: str
    audio: Path | None = None
    text: str | None = None
    instruct: str | None = None
    x_vector_only: bool = False
    replace: bool = False


def make_voice(order: VoiceOrder, registry: VoiceRegistry, bundle_dir: Path, settings: Settings,
               warn: Callable[[str], None] = print) -> RegisteredVoice:  # fmt: skip
    """Check, derive and store the voice `order` asks for; the stored voice. `warn` gets what the
    operator should know but is no refusal (a bundle without a speech encoder)."""
    from qwen3tts.model.bundle import read_manifest

    name = validate_name(order.name)  # before any expensive work
    text = validate_transcript(order.text) if order.text is not None else None
    instruct = checked_instruct(order.instruct) if order.instruct is not None else None
    if (registry.directory / name).exists() and not order.replace:
        raise VoiceError(f"voice {name!r} exists; remove it first or pass --replace")
    spec, digest = read_manifest(bundle_dir).spec, bundle_hash(bundle_dir)
    if instruct is not None:
        if text or order.x_vector_only:
            raise VoiceError("--text and --x-vector-only go with --audio, not with --instruct")
        if not instruct.strip():
            raise VoiceError("--instruct must describe the voice")
        if not spec.supports_instruct:
            raise VoiceError(f"a {spec.size} {spec.variant} bundle takes no voice description")
        voice = RegisteredVoice(name, "design", digest, instruct=instruct.strip())
    else:
        if spec.speaker_encoder is None:
            raise VoiceError(f"cloning from audio needs a Base bundle; this one is {spec.variant}")
        if not order.x_vector_only and not text:
            raise VoiceError("--text (the transcript of the recording) is needed unless --x-vector-only")
        if order.audio is None:
            raise VoiceError("cloning needs a recording (--audio)")
        voice = _clone(name, order.audio, None if order.x_vector_only else text, bundle_dir, digest, settings,
                       warn)  # fmt: skip
    registry.add(voice, replace=order.replace)
    return voice


def _clone(name: str, audio: Path, text: str | None, bundle_dir: Path, digest: str, settings: Settings,
           warn: Callable[[str], None]) -> RegisteredVoice:  # fmt: skip
    from qwen3tts.model import bundle as layout
    from qwen3tts.runtime.parts import PartCompiler
    from qwen3tts.runtime.speaker import SAMPLE_RATE, SpeakerEncoder, resample_to_speaker_rate
    from qwen3tts.voices.reference_audio import read_reference_audio

    wave, rate = read_reference_audio(audio)
    wave24 = resample_to_speaker_rate(wave, rate)  # (n,) f32 at 24 kHz, as the official soxr_hq path
    compiler = PartCompiler(settings.devices, settings.model.cache_dir)
    compiled, _ = compiler.compile(
        "speaker_encoder", compiler.read(bundle_dir / layout.SPEAKER_ENCODER_XML), ("CPU",)
    )
    xvector = SpeakerEncoder(compiled).xvector(wave24, SAMPLE_RATE)
    ref_codes = None if text is None else encode_reference_codes(bundle_dir, settings, wave24, warn)
    return RegisteredVoice(name, "clone", digest, x_vector_only=text is None, ref_text=text, xvector=xvector,
                           ref_audio=wave24, ref_codes=ref_codes)  # fmt: skip


def checked_instruct(instruct: str) -> str:
    """A VoiceDesign description: UTF-8 text of at most MAX_TRANSCRIPT_CHARS, like a transcript."""
    try:
        instruct.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise VoiceError(f"--instruct is not valid UTF-8 (at character {exc.start})") from None
    if len(instruct) > MAX_TRANSCRIPT_CHARS:
        raise VoiceError(f"--instruct is {len(instruct)} characters; at most {MAX_TRANSCRIPT_CHARS}")
    return instruct


def encode_reference_codes(bundle_dir: Path, settings: Settings, wave24: np.ndarray,
                           warn: Callable[[str], None] = print) -> np.ndarray | None:  # fmt: skip
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
        warn("warning: this bundle has no speech encoder; rebuild it for ICL cloning (x-vector used)")
        return None
    compiler = PartCompiler(settings.devices, settings.model.cache_dir)
    compiled, _ = compiler.compile(
        "speech_encoder", compiler.read(bundle_dir / layout.SPEECH_ENCODER_XML), ("CPU",)
    )
    return SpeechEncoder(compiled).encode(wave24, SAMPLE_RATE)
