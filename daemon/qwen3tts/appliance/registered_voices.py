"""The operator's named voices (`qwen3tts voice add`, voices/registry.py) as the daemon speaks them.

At start and on SIGHUP `RegisteredVoices.load()` reads the registry for the loaded bundle's hash and
registers each cloned voice's inputs (x-vector, and for ICL the reference codes and transcript ids)
with the prompt builder under the request key `voice:NAME`; a VoiceDesign voice is its description.
`choice()` turns a voice name from an announcement or a network request into the engine request's
speaker / ref_audio / instruct: the one place that mapping lives. A name only ever selects a stored
voice (the registry validates it before building a path): no file path comes from outside.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwen3tts.errors import RequestError
from qwen3tts.voices import RegisteredVoice, VoiceRegistry, bundle_hash

log = logging.getLogger(__name__)

KEY_PREFIX = "voice:"  # request.ref_audio keys of registered voices (never a path)


@dataclass(frozen=True)
class VoiceChoice:
    """The voice fields of one engine request."""

    speaker: str | None = None
    ref_audio: str | None = None
    instruct: str | None = None


class RegisteredVoices:
    """Name -> how a request speaks with it; replaced as a whole by `load()` (readers need no lock)."""

    def __init__(self, entries: dict[str, VoiceChoice] | None = None):
        self._entries: dict[str, VoiceChoice] = {}
        self._names: tuple[str, ...] = ()
        self._identities: dict[str, str] = {}
        self._set(entries or {})

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names in the registry's spelling, sorted."""
        return self._names

    def identity(self, voice: str | None) -> str | None:
        """What the sound of `voice` depends on (for the phrase cache key): a registered voice's content
        digest, so re-adding it under the same name is a different voice; else the name itself."""
        return self._identities.get(voice.lower(), voice) if voice else voice

    def choice(self, voice: str | None, instruct: str | None) -> VoiceChoice:
        """Engine fields for `voice` (a preset speaker unless registered) and the message's instruct.

        A design voice's description replaces the message's instruct: the name stands for it.
        """
        entry = self._entries.get(voice.lower()) if voice else None
        if entry is None:
            return VoiceChoice(speaker=voice, instruct=instruct)
        return VoiceChoice(ref_audio=entry.ref_audio, instruct=entry.instruct or instruct)

    def load(self, directory: Path, bundle_dir: Path, prompt_builder) -> None:
        """Read the registry for the bundle at `bundle_dir` and register its voices; a damaged or
        unusable voice is skipped with a warning (it never stops the daemon)."""
        registry = VoiceRegistry(directory)
        try:
            digest = bundle_hash(bundle_dir)
        except Exception as exc:  # a bundle given as a test double, or a manifest that vanished
            log.warning("registered voices: no bundle hash for %s (%s); none loaded", bundle_dir, exc)
            self._set({})
            return
        entries: dict[str, VoiceChoice] = {}
        identities: dict[str, str] = {}
        for name in registry.names(digest):
            try:
                voice = registry.get(name, digest)
                entries[name] = _register(voice, prompt_builder)
            except RequestError as exc:  # VoiceError included
                log.warning("registered voice %s skipped: %s", name, exc)
                continue
            identities[name.lower()] = _identity(voice)
        stale = [
            k
            for k in prompt_builder.voices
            if k.startswith(KEY_PREFIX) and k[len(KEY_PREFIX) :] not in entries
        ]
        for key in stale:  # removed since the last load: a queued request for it now fails cleanly
            prompt_builder.voices.pop(key, None)
        self._set(entries, identities)
        log.info("registered voices: %s", ", ".join(entries) or "none")

    def _set(self, entries: dict[str, VoiceChoice], identities: dict[str, str] | None = None) -> None:
        self._entries = {name.lower(): choice for name, choice in entries.items()}
        self._identities = identities or {}
        self._names = tuple(sorted(entries))


def _identity(voice: RegisteredVoice) -> str:
    digest = hashlib.sha256(repr((voice.kind, voice.x_vector_only, voice.ref_text, voice.instruct)).encode())
    for array in (voice.xvector, voice.ref_codes):
        if array is not None:
            digest.update(np.ascontiguousarray(array).tobytes())
    return f"voice:{voice.name}:{digest.hexdigest()[:16]}"


def _register(voice: RegisteredVoice, prompt_builder) -> VoiceChoice:
    if voice.kind == "design":
        return VoiceChoice(instruct=voice.instruct)
    from qwen3tts.runtime.voice import VoiceInputs

    if voice.xvector is None:
        raise RequestError("a cloned voice without its x-vector")
    if voice.uses_icl:
        text_ids = np.asarray(prompt_builder.tokenizer.encode_ref_text(voice.ref_text), np.int64)
        inputs = VoiceInputs(np.asarray(voice.xvector, np.float32), np.asarray(voice.ref_codes), text_ids)
    else:
        inputs = VoiceInputs(np.asarray(voice.xvector, np.float32))
    key = KEY_PREFIX + voice.name
    prompt_builder.register_voice(key, inputs)
    return VoiceChoice(ref_audio=key)
