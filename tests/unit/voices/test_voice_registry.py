"""VoiceRegistry without OpenVINO: round trip, bundle binding, hostile names, damaged files."""

import json

import numpy as np
import pytest

from qwen3tts.errors import RequestError
from qwen3tts.settings_loader import load_settings
from qwen3tts.voices import RegisteredVoice, VoiceError, VoiceRegistry, voices_dir

BUNDLE = "a" * 64
OTHER = "b" * 64


def clone(name="anna", **changes):
    fields = dict(
        x_vector_only=False,
        ref_text="Hello, this is Anna.",
        xvector=np.linspace(-1, 1, 32, dtype=np.float32),
        ref_audio=np.sin(np.arange(24000, dtype=np.float32) / 10),
        ref_codes=np.arange(64, dtype=np.int64).reshape(4, 16),
    )
    return RegisteredVoice(name, "clone", BUNDLE, **{**fields, **changes})


def test_a_clone_and_a_design_voice_round_trip_with_every_field(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    registry.add(RegisteredVoice("calm-announcer", "design", BUNDLE, instruct="A calm low voice."))
    assert registry.names() == ["anna", "calm-announcer"]
    anna = registry.get("anna", BUNDLE)
    expected = clone()
    for field in ("xvector", "ref_audio", "ref_codes"):
        np.testing.assert_array_equal(getattr(anna, field), getattr(expected, field))
        assert not getattr(anna, field).flags.writeable
    assert (anna.kind, anna.ref_text, anna.instruct, anna.uses_icl) == (
        "clone",
        "Hello, this is Anna.",
        None,
        True,
    )
    design = registry.get("calm-announcer", BUNDLE)
    assert (design.kind, design.instruct, design.xvector, design.uses_icl) == (
        "design",
        "A calm low voice.",
        None,
        False,
    )


def test_a_voice_without_codes_or_marked_x_vector_only_does_not_use_icl(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone("no-codes", ref_codes=None))
    registry.add(clone("xvec", x_vector_only=True, ref_text=None, ref_codes=None))
    assert not registry.get("no-codes", BUNDLE).uses_icl
    assert registry.get("xvec", BUNDLE).ref_codes is None


def test_remove_deletes_and_an_existing_name_is_not_silently_overwritten(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    with pytest.raises(VoiceError, match="exists"):
        registry.add(clone(ref_text="another"))
    registry.add(clone(ref_text="another"), replace=True)
    assert registry.get("anna", BUNDLE).ref_text == "another"
    registry.remove("anna")
    assert registry.names() == [] and list(tmp_path.iterdir()) == []
    with pytest.raises(VoiceError, match="no voice named 'anna'"):
        registry.remove("anna")


def test_a_voice_is_read_once_and_again_after_it_was_replaced(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    first = registry.get("anna", BUNDLE)
    assert registry.get("anna", BUNDLE) is first  # no second read
    VoiceRegistry(tmp_path).add(clone(ref_text="replaced"), replace=True)  # e.g. by `qwen3tts voice add`
    assert registry.get("anna", BUNDLE).ref_text == "replaced"


def test_a_voice_made_for_another_bundle_is_refused_and_not_listed_for_this_one(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    with pytest.raises(VoiceError, match="made for another model bundle"):
        registry.get("anna", OTHER)
    assert registry.names(BUNDLE) == ["anna"] and registry.names(OTHER) == []


@pytest.mark.parametrize(
    "hostile", ["../anna", "..", ".", ".hidden", "a/b", "/etc/passwd", "", "x" * 65, "anna\n", "ä", None, 3]
)
def test_a_hostile_name_is_a_voice_error_and_touches_no_path(tmp_path, hostile):
    (tmp_path / "registry").mkdir()
    registry = VoiceRegistry(tmp_path / "registry")
    (tmp_path / "voice.json").write_text("{}")  # what ../ would reach
    for call in (lambda: registry.get(hostile, BUNDLE), lambda: registry.remove(hostile)):
        with pytest.raises(VoiceError, match="invalid voice name"):
            call()
    with pytest.raises(VoiceError, match="invalid voice name"):
        registry.add(clone(hostile))
    assert list((tmp_path / "registry").iterdir()) == [] and (tmp_path / "voice.json").exists()


def test_an_unknown_voice_names_the_known_ones_and_is_a_request_error(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    with pytest.raises(RequestError, match=r"unknown voice 'bob' \(known: anna\)"):
        registry.get("bob", BUNDLE)


def test_damaged_files_are_reported_not_used(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    path = tmp_path / "anna" / "xvector.npy"
    path.write_bytes(path.read_bytes()[:-4])  # truncated
    with pytest.raises(VoiceError, match=r"xvector\.npy does not match its checksum"):
        registry.get("anna", BUNDLE)
    (tmp_path / "anna" / "voice.json").write_text("{not json")
    with pytest.raises(VoiceError, match="damaged"):
        registry.get("anna", BUNDLE)


def test_leftovers_and_foreign_files_are_not_voices(tmp_path):
    registry = VoiceRegistry(tmp_path)
    registry.add(clone())
    (tmp_path / ".tmp-bob-123").mkdir()  # an interrupted add
    (tmp_path / ".tmp-bob-123" / "voice.json").write_text(json.dumps({"format": 1}))
    (tmp_path / "notes.txt").write_text("operator's file")
    assert registry.names() == ["anna"]


def test_the_registry_lives_beside_the_spool():
    settings = load_settings(None, ["announcements.spool_dir=/var/lib/qwen3tts/spool"])
    assert str(voices_dir(settings)) == "/var/lib/qwen3tts/voices"
