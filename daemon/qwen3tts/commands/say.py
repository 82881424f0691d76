"""`qwen3tts say TEXT`: synthesise one text end to end and report time to first audio and real-time factor."""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from qwen3tts.engine.sequence import Request
from qwen3tts.errors import RequestError
from qwen3tts.settings import Settings

SAMPLE_RATE = 24000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", help="what to say")
    parser.add_argument("--bundle", type=Path, help="bundle directory (default: model.bundle setting)")
    parser.add_argument("--voice", help="preset speaker (CustomVoice), default: voice.voice setting")
    parser.add_argument("--language", help="language name or auto (default: voice.language setting)")
    parser.add_argument("--instruct", help="style instruction (VoiceDesign, 1.7B CustomVoice)")
    parser.add_argument(
        "--ref-audio",
        type=Path,
        help="reference recording (WAV, FLAC, ...) whose voice a Base bundle speaks with",
    )
    parser.add_argument(
        "--ref-text",
        help="transcript of --ref-audio: clone by in-context learning (the official main mode) "
        "instead of the x-vector only",
    )
    parser.add_argument("--seed", type=int, help="sampling seed: same seed, same audio")
    parser.add_argument("--greedy", action="store_true", help="argmax instead of sampling")
    parser.add_argument(
        "--max-frames", type=_positive, help="at most this many 80 ms frames (default: engine.max_frames)"
    )
    parser.add_argument("--out", type=Path, help="write a 24 kHz 16-bit WAV here instead of playing it")


def say(args: argparse.Namespace, settings: Settings) -> int:
    from qwen3tts.engine.sequence import SequenceStatus
    from qwen3tts.runtime.loader import load_runtime

    if args.ref_text is not None and args.ref_audio is None:
        raise RequestError("--ref-text is the transcript of --ref-audio; give both")
    bundle = args.bundle or settings.model.bundle
    spec = _bundle_spec(bundle)
    request = _request(args, settings, spec)
    _check(request, spec)  # before minutes of compiling, not after
    runtime = load_runtime(bundle, settings)
    if args.ref_text is not None:
        request = dataclasses.replace(
            request, ref_audio=_register_icl_voice(runtime, args.ref_audio, args.ref_text)
        )
    runtime.engine.start()
    try:
        started = time.perf_counter()
        handle = runtime.engine.submit(request)
        chunks, first_audio = [], None
        for chunk in handle:
            if first_audio is None and chunk.size:
                first_audio = time.perf_counter() - started
            chunks.append(chunk)
        elapsed = time.perf_counter() - started
    except RequestError as exc:  # the engine names the request by its id, which means nothing here
        raise RequestError(str(exc).replace(f"request {request.id!r}: ", "")) from exc
    finally:
        runtime.engine.stop()
    pcm = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    seconds = pcm.size / SAMPLE_RATE
    if args.out:
        import soundfile

        args.out.parent.mkdir(parents=True, exist_ok=True)
        soundfile.write(str(args.out), np.clip(pcm, -1.0, 1.0), SAMPLE_RATE, subtype="PCM_16")
    else:
        _play(pcm, settings)
    rtf = elapsed / seconds if seconds else float("inf")
    frames = handle.frames.shape[0]
    print(
        f"{seconds:.2f} s of audio ({frames} frames) in {elapsed:.2f} s: "
        f"first audio after {first_audio or 0:.3f} s, real-time factor {rtf:.2f}"
        + (f", wrote {args.out}" if args.out else "")
    )
    if handle.status is SequenceStatus.FINISHED_LENGTH:
        limit = "--max-frames" if args.max_frames else "engine.max_frames"
        print(
            f"the text was cut: it reached the cap of {frames} frames ({frames * 0.08:.1f} s; raise {limit})"
        )
    return 0


def _request(args: argparse.Namespace, settings: Settings, spec) -> Request:
    """The request `say` submits; the text without the surrounding whitespace the official code ignores."""
    voice = settings.voice
    return Request(
        id="say",
        text=args.text.strip(),
        language=_language(args.language or voice.language, spec),
        speaker=args.voice or voice.voice or _default_speaker(spec),
        instruct=args.instruct or voice.instruct or None,
        seed=args.seed,
        greedy=args.greedy,
        # the engine counts sampled tokens like HF's max_new_tokens: N tokens give N - 1 frames
        max_frames=None if args.max_frames is None else args.max_frames + 1,
        ref_audio=str(args.ref_audio) if args.ref_audio else None,
    )


def _language(tag: str, spec) -> str:
    """A model name or ISO 639-1 / BCP 47 tag (`en-GB`, `zh-CN`) -> the bundle's name for it."""
    from qwen3tts.text import resolve_language

    name = resolve_language(tag, spec.languages)
    return next((known for known in spec.languages if known.lower() == name), name)


def _bundle_spec(bundle: Path):
    from qwen3tts.model.bundle import read_manifest

    return read_manifest(bundle, verify_files=False).spec  # load_runtime verifies every file next


def _check(request: Request, spec) -> None:
    """The prompt builder's own checks (voice, language, instruct, reference), on the spec alone."""
    from qwen3tts.runtime.prompt import PromptBuilder

    PromptBuilder(spec, tokenizer=None, text_table=None, codec_table=None).validate(request)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a whole number of frames, got {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 frame, got {value}")
    return value


def _register_icl_voice(runtime, ref_audio: Path, ref_text: str) -> str:
    """Encode the reference (x-vector, codes, transcript ids) and register it under a request key."""
    if runtime.voice_encoder is None:
        raise RequestError(f"--ref-text needs a Base bundle, this bundle is {runtime.spec.variant}")
    voice = runtime.voice_encoder.encode_file(ref_audio, ref_text)
    key = f"icl:{ref_audio}"
    runtime.prompt_builder.register_voice(key, voice)
    return key


def _default_speaker(spec) -> str | None:
    """CustomVoice needs a speaker; take the bundle's first preset when none is configured."""
    return next(iter(spec.speakers), None) if spec.variant == "custom_voice" else None


def _play(pcm: np.ndarray, settings: Settings) -> None:
    """Through the configured sink (ALSA, or a WAV file in audio.wav_dir when there is no sound card)."""
    from qwen3tts.appliance.audio.alsa import open_sink

    sink = open_sink(settings.audio)
    block = SAMPLE_RATE * settings.audio.block_ms // 1000
    try:
        sink.begin("say")
        for start in range(0, pcm.size, block):
            sink.write(pcm[start : start + block])
        sink.end()  # drains: returns once the last sample has played
    finally:
        sink.close()
    print(f"played on {sink.name}")
