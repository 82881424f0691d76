"""Registered voices loaded into the running engine (service/voices.py): the registry read for the loaded
bundle, clone inputs handed to the prompt builder under `voice:NAME`, design voices as their description,
damaged voices skipped, removed ones forgotten."""

from __future__ import annotations

import numpy as np
import pytest

from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import RequestError
from qwen3tts.service import voices as loading
from qwen3tts.service.voices import load_registered_voices
from qwen3tts.synthesis import sentence_request
from qwen3tts.voices import RegisteredVoice, VoiceRegistry
from qwen3tts.voices.catalog import VoiceCatalog, VoiceChoice

HASH = "a" * 64


class FakeBuilder:
    """The two things loading needs of runtime.prompt.PromptBuilder."""

    def __init__(self):
        self.voices = {}
        self.tokenizer = self

    def encode_ref_text(self, text: str):
        return tuple(ord(c) for c in text)

    def register_voice(self, key, inputs):
        if inputs.xvector.shape != (4,):
            raise RequestError("x-vector of the wrong size")
        self.voices[key] = inputs


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setattr(loading, "bundle_hash", lambda _bundle: HASH)
    registry = VoiceRegistry(tmp_path / "voices")
    xvector = np.arange(4, dtype=np.float32)
    codes = np.arange(32, dtype=np.int64).reshape(2, 16)
    registry.add(RegisteredVoice("anna", "clone", HASH, ref_text="Hi.", xvector=xvector, ref_codes=codes))
    registry.add(RegisteredVoice("bob", "clone", HASH, x_vector_only=True, xvector=xvector))
    registry.add(RegisteredVoice("calm", "design", HASH, instruct="A calm low voice."))
    registry.add(RegisteredVoice("other", "clone", "b" * 64, xvector=xvector))  # another bundle's
    registry.add(RegisteredVoice("wrong", "clone", HASH, xvector=np.zeros(3, np.float32)))
    return registry


def test_load_registers_clone_voices_and_maps_design_voices_to_their_description(registry, tmp_path):
    builder, voices = FakeBuilder(), VoiceCatalog(("Ryan",))
    assert load_registered_voices(voices, registry.directory, tmp_path, builder) is True
    assert voices.registered_names == (
        "anna",
        "bob",
        "calm",
    )  # "other" is another bundle's, "wrong" does not fit
    anna = builder.voices["voice:anna"]
    assert anna.icl and list(anna.ref_text_ids) == [ord("H"), ord("i"), ord(".")]
    np.testing.assert_array_equal(anna.ref_codes, registry.get("anna", HASH).ref_codes)
    assert not builder.voices["voice:bob"].icl
    assert voices.choice("calm", "cheerful") == VoiceChoice(instruct="A calm low voice.")
    assert voices.identity("anna") != voices.identity("bob") and voices.identity("anna").startswith(
        "voice:anna:"
    )


def test_a_reload_forgets_removed_voices_and_says_the_names_changed(registry, tmp_path):
    builder, voices = FakeBuilder(), VoiceCatalog()
    load_registered_voices(voices, registry.directory, tmp_path, builder)
    assert load_registered_voices(voices, registry.directory, tmp_path, builder) is False
    registry.remove("anna")
    assert load_registered_voices(voices, registry.directory, tmp_path, builder) is True
    assert voices.registered_names == ("bob", "calm") and "voice:anna" not in builder.voices
    assert voices.choice("anna", None) == VoiceChoice(speaker="anna")  # the engine rejects it as unknown


def test_without_a_prompt_builder_or_a_bundle_hash_nothing_is_registered(registry, tmp_path, monkeypatch):
    voices = VoiceCatalog()
    assert load_registered_voices(voices, registry.directory, tmp_path, None) is False
    monkeypatch.undo()  # the real bundle_hash: tmp_path holds no bundle
    assert load_registered_voices(voices, registry.directory, tmp_path, FakeBuilder()) is False
    assert voices.registered_names == ()


def test_sentence_request_carries_the_registered_voice_and_the_seed(registry, tmp_path):
    voices = VoiceCatalog()
    load_registered_voices(voices, registry.directory, tmp_path, FakeBuilder())
    common = dict(language="english", instruct=None, rank=Priority.NORMAL.rank, max_frames=100)
    request = sentence_request("a#0", "Hello.", voice="anna", voices=voices, seed=3, **common)
    assert (request.speaker, request.ref_audio, request.seed) == (None, "voice:anna", 3)
    preset = sentence_request("a#1", "Hello.", voice="ryan", voices=voices, **common)
    assert (preset.speaker, preset.ref_audio, preset.seed) == ("ryan", None, None)
