"""Registered voices loaded into the running engine: the registry read for the loaded bundle, each cloned
voice's inputs (x-vector, and for ICL the reference codes and transcript ids) handed to the prompt builder
under `voice:NAME`, and the catalog told what it now lists.

A damaged or unusable voice is skipped with a warning: it never stops the daemon. A voice removed since the
last load is taken out of the prompt builder, so a queued request for it fails cleanly. At start, on SIGHUP
and when the status page added or removed a voice; one load at a time.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path

import numpy as np

from qwen3tts.errors import BundleError, RequestError
from qwen3tts.runtime.cloning import VoiceInputs
from qwen3tts.voices import RegisteredVoice, VoiceRegistry, bundle_hash
from qwen3tts.voices.catalog import KEY_PREFIX, VoiceCatalog, VoiceChoice

log = logging.getLogger(__name__)
_LOADING = threading.Lock()  # SIGHUP (main thread) and the status page (servers' worker) may load at once


def load_registered_voices(catalog: VoiceCatalog, directory: Path, bundle_dir: Path, prompt_builder) -> bool:
    """Read the registry for the bundle at `bundle_dir` into `catalog`; True when the listed names changed.

    `prompt_builder` None (a runtime test double) registers nothing.
    """
    if prompt_builder is None:
        return catalog.set_registered({}, {})
    try:
        digest = bundle_hash(bundle_dir)
    except (BundleError, OSError) as exc:  # a manifest that vanished or cannot be read
        log.warning("registered voices: no bundle hash for %s (%s); none loaded", bundle_dir, exc)
        return catalog.set_registered({}, {})
    with _LOADING:
        return _load(catalog, VoiceRegistry(directory), digest, prompt_builder)


def _load(catalog: VoiceCatalog, registry: VoiceRegistry, digest: str, prompt_builder) -> bool:
    entries: dict[str, VoiceChoice] = {}
    identities: dict[str, str] = {}
    for name in registry.names(digest):
        try:
            voice = registry.get(name, digest)
            entries[name] = _register(voice, prompt_builder)
        except RequestError as exc:  # VoiceError included
            log.warning("registered voice %s skipped: %s", name, exc)
            continue
        identities[name] = _identity(voice)
    for key in [k for k in prompt_builder.voices if k.startswith(KEY_PREFIX)]:
        if key[len(KEY_PREFIX) :] not in entries:
            prompt_builder.voices.pop(key, None)
    log.info("registered voices: %s", ", ".join(entries) or "none")
    return catalog.set_registered(entries, identities)


def _identity(voice: RegisteredVoice) -> str:
    digest = hashlib.sha256(repr((voice.kind, voice.x_vector_only, voice.ref_text, voice.instruct)).encode())
    for array in (voice.xvector, voice.ref_codes):
        if array is not None:
            digest.update(np.ascontiguousarray(array).tobytes())
    return f"voice:{voice.name}:{digest.hexdigest()[:16]}"


def _register(voice: RegisteredVoice, prompt_builder) -> VoiceChoice:
    if voice.kind == "design":
        return VoiceChoice(instruct=voice.instruct)
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
