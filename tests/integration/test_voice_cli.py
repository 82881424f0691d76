"""`qwen3tts voice add|list|remove` on real tiny bundles: the stored x-vector is the one `say` computes."""

import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile
from bundles import PARITY_OVERRIDES

from qwen3tts.cli import main
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings
from qwen3tts.voices import VoiceError, VoiceRegistry, bundle_hash

RATE = 16000  # not the model's 24 kHz: the recording is resampled on the way in


def recording(seconds: float = 3.0) -> np.ndarray:
    """(n, 2) stereo: a voiced-like tone with harmonics and a little noise."""
    t = np.arange(int(seconds * RATE)) / RATE
    voice = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 8)) * (
        0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    )
    noise = np.random.default_rng(0).normal(0, 0.01, t.size)
    mono = (0.3 * voice / np.abs(voice).max() + noise).astype(np.float32)
    return np.stack([mono, 0.8 * mono], axis=1)


@pytest.fixture(scope="module")
def base_bundle(tiny_models):
    return tiny_models.bundle("base", "tiny", "f32")


@pytest.fixture
def files(tmp_path):
    samples = recording()
    soundfile.write(tmp_path / "ref.flac", samples, RATE, subtype="PCM_16")
    soundfile.write(tmp_path / "ref.wav", samples, RATE, subtype="PCM_16")
    return tmp_path


def voice_cli(bundle, state, *args):
    """In-process CLI run with the same device settings as the runtime it is compared with."""
    overrides = [f"model.bundle={bundle}", f"announcements.spool_dir={state}/spool", *PARITY_OVERRIDES]
    return main([arg for o in overrides for arg in ("--set", o)] + ["voice", *args])


def test_add_list_get_remove_round_trip_on_a_base_bundle(base_bundle, files, capsys):
    state = files / "state"
    wav, flac = str(files / "ref.wav"), str(files / "ref.flac")
    assert voice_cli(base_bundle, state, "add", "anna", "--audio", wav, "--text", "Hello there.") == 0
    assert voice_cli(base_bundle, state, "add", "anna.x", "--audio", flac, "--x-vector-only") == 0
    capsys.readouterr()
    assert voice_cli(base_bundle, state, "list") == 0
    assert capsys.readouterr().out.split() == ["anna", "anna.x"]

    registry = VoiceRegistry(state / "voices")
    anna = registry.get("anna", bundle_hash(base_bundle))
    # The x-vector `say --ref-audio` computes per request from the same recording (as a WAV).
    runtime = load_runtime(base_bundle, load_settings(None, list(PARITY_OVERRIDES)))
    expected = runtime.prompt_builder.xvectors(str(files / "ref.wav"))
    np.testing.assert_allclose(anna.xvector, expected, rtol=1e-4, atol=1e-5)
    assert anna.ref_audio.shape == (3 * 24000,) and anna.ref_text == "Hello there."
    # ICL: the reference codes are the ones the runtime's encoder gives `say --ref-audio --ref-text`.
    codes = runtime.voice_encoder.speech.encode(anna.ref_audio, 24000)
    assert anna.uses_icl and anna.ref_codes.shape == (38, 16) == codes.shape  # ceil(3 s * 12.5)
    np.testing.assert_array_equal(anna.ref_codes, codes)
    x_only = registry.get("anna.x", bundle_hash(base_bundle))
    assert x_only.x_vector_only and x_only.ref_text is None
    assert x_only.ref_codes is None and not x_only.uses_icl
    # FLAC: libsndfile quantised the same samples to 16 bits with a rounding of its own (1 LSB apart).
    np.testing.assert_allclose(x_only.xvector, anna.xvector, atol=1e-2)

    assert voice_cli(base_bundle, state, "remove", "anna") == 0
    assert registry.names() == ["anna.x"]


def test_a_voice_is_refused_for_another_bundle(base_bundle, tiny_models, files):
    state = files / "state"
    assert (
        voice_cli(base_bundle, state, "add", "anna", "--audio", str(files / "ref.flac"), "--x-vector-only")
        == 0
    )
    other = tiny_models.bundle("custom_voice", "tiny", "f32")
    with pytest.raises(VoiceError, match="made for another model bundle"):
        VoiceRegistry(state / "voices").get("anna", bundle_hash(other))


def test_a_voice_design_description_is_saved_as_a_named_voice(tiny_models, files):
    bundle = tiny_models.bundle("voice_design", "tiny-1.7b", "f32")
    state = files / "state"
    assert voice_cli(bundle, state, "add", "calm", "--instruct", "A calm, low voice.") == 0
    voice = VoiceRegistry(state / "voices").get("calm", bundle_hash(bundle))
    assert (voice.kind, voice.instruct, voice.xvector) == ("design", "A calm, low voice.", None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "../evil", "--audio", "{ref}", "--x-vector-only"], "invalid voice name"),
        (["add", "anna", "--audio", "{ref}"], "--text"),
        (["add", "anna", "--instruct", "A calm voice."], "takes no voice description"),
        (["add", "anna", "--audio", "{dir}/missing.wav", "--x-vector-only"], "cannot read audio"),
        (["remove", "nobody"], "no voice named 'nobody'"),
        (["add", "anna", "--audio", "{ref}", "--text", "a" * 100_000], "at most 1000"),
        (["add", "anna", "--audio", "{ref}", "--text", "caf\udce9"], "not valid UTF-8"),
        (["add", "anna", "--audio", "{dir}/fifo.wav", "--x-vector-only"], "is a FIFO"),
        (["add", "anna", "--audio", "/dev/zero", "--x-vector-only"], "is a device"),
        (["add", "anna", "--audio", "{dir}/silent.wav", "--x-vector-only"], "silent"),
        (["add", "anna", "--audio", "{dir}/cut.wav", "--x-vector-only"], "truncated"),
        (["add", "anna", "--audio", "{dir}/five.wav", "--x-vector-only"], "(5 frames)"),
    ],
)
def test_bad_input_is_a_clear_error_and_stores_nothing(base_bundle, files, capsys, args, message):
    state = files / "state"
    os.mkfifo(files / "fifo.wav")
    soundfile.write(files / "silent.wav", np.zeros(3 * RATE, np.float32), RATE, subtype="PCM_16")
    soundfile.write(files / "five.wav", recording()[:5], RATE, subtype="PCM_16")
    whole = (files / "ref.wav").read_bytes()
    (files / "cut.wav").write_bytes(whole[: int(len(whole) * 0.6)])
    args = [a.format(ref=files / "ref.flac", dir=files) for a in args]
    assert voice_cli(base_bundle, state, *args) == 1
    assert message in capsys.readouterr().err
    assert VoiceRegistry(state / "voices").names() == []


def test_cloning_needs_a_base_bundle(tiny_models, files, capsys):
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    assert (
        voice_cli(
            bundle, files / "state", "add", "anna", "--audio", str(files / "ref.flac"), "--x-vector-only"
        )
        == 1
    )
    assert "needs a Base bundle" in capsys.readouterr().err


def test_an_invalid_utf8_transcript_from_the_command_line_is_an_error_not_a_traceback(files):
    # argv bytes that are not UTF-8 (as a shell passes them) reach Python as lone surrogates
    command = [sys.executable, "-m", "qwen3tts", "--set", f"model.bundle={files}/no-bundle"]
    command += ["voice", "--dir", str(files / "voices"), "add", "anna", "--audio", str(files / "ref.wav")]
    result = subprocess.run([*map(os.fsencode, command), b"--text", b"caf\xe9 au lait"], capture_output=True)
    assert result.returncode == 1
    assert b"not valid UTF-8" in result.stderr and b"Traceback" not in result.stderr
