"""What the official implementation outputs for each kind of golden case (tokenizer, speaker encoder,
speech encoder, codec, talker), from the inputs in cases.py.

Part of make_golden.py's generator; runs in the reference venv (the stubs let `qwen_tts` import).
"""

from __future__ import annotations

import stubs

stubs.install()

import cases  # noqa: E402
import numpy as np  # noqa: E402
import official_checks  # noqa: E402
import talker_probe  # noqa: E402
import torch  # noqa: E402
from qwen_tts.core.models import modeling_qwen3_tts  # noqa: E402


class CaseOutcomeError(RuntimeError):
    """A generation case did not behave as cases.py expects (EOS too early, or no EOS where wanted)."""


def tokenizer_case(tts) -> dict:
    """Ids of the plain TOKENIZER_TEXTS, concatenated, with offsets[i]:offsets[i+1] per text."""
    ids = [tts.processor(text=text)["input_ids"] for text in cases.TOKENIZER_TEXTS]
    ids = [row[0] if row and isinstance(row[0], list) else row for row in ids]
    offsets = np.cumsum([0] + [len(row) for row in ids])
    flat = np.array([i for row in ids for i in row], dtype=np.int64)
    return {"ids": flat, "offsets": offsets.astype(np.int64)}


def reference_audio(sample_rate: int = cases.SAMPLE_RATE) -> np.ndarray:
    """2 s of a seeded sine chord with noise and a slow envelope: a stand-in for a voice sample."""
    rng = np.random.default_rng(cases.REFERENCE_AUDIO_SEED)
    t = np.arange(int(cases.REFERENCE_AUDIO_SECONDS * sample_rate)) / sample_rate
    voice = sum(np.sin(2 * np.pi * f * t) / k for k, f in enumerate((180.0, 360.0, 540.0, 1250.0), 1))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3.0 * t)
    return (0.15 * envelope * voice + 0.02 * rng.standard_normal(t.shape)).astype(np.float32)


@torch.no_grad()
def speaker_case(tts) -> dict:
    audio = reference_audio()
    mel = modeling_qwen3_tts.mel_spectrogram(
        torch.from_numpy(audio).unsqueeze(0),
        n_fft=1024,
        num_mels=128,
        sampling_rate=cases.SAMPLE_RATE,
        hop_size=256,
        win_size=1024,
        fmin=0,
        fmax=12000,
    ).transpose(1, 2)  # (1, T, 128)
    xvector = tts.model.extract_speaker_embedding(audio=audio, sr=cases.SAMPLE_RATE)
    direct = tts.model.speaker_encoder(mel)[0]
    if not torch.allclose(direct, xvector, atol=1e-5):
        raise official_checks.CheckpointMismatchError("speaker_encoder(mel) != extract_speaker_embedding")
    return {"audio": audio, "mel": mel[0].numpy(), "xvector": xvector.float().numpy()}


@torch.no_grad()
def speech_encoder_case(tts, sample_rate: int) -> dict:
    """The reference audio at `sample_rate` through the official `Qwen3TTSTokenizer.encode` (resamples
    to 24 kHz with librosa's soxr_hq) -> codes (T, 16)."""
    audio = reference_audio(sample_rate)
    codes = tts.model.speech_tokenizer.encode(audio, sr=sample_rate).audio_codes[0]
    return {"audio": audio, "codes": codes.numpy().astype(np.int64)}


@torch.no_grad()
def codec_case(tts, num_frames: int, seed: int) -> dict:
    """Random codes through the official `Qwen3TTSTokenizer.decode` (chunked 300/25) to a waveform."""
    codebook = tts.model.speech_tokenizer.model.decoder.config.codebook_size
    codes = np.random.default_rng(seed).integers(0, codebook, (num_frames, 16)).astype(np.int64)
    waves, sample_rate = tts.model.speech_tokenizer.decode([{"audio_codes": torch.from_numpy(codes)}])
    if sample_rate != cases.SAMPLE_RATE or waves[0].shape != (num_frames * 1920,):
        raise official_checks.CheckpointMismatchError(f"decode gave {waves[0].shape} at {sample_rate} Hz")
    return {"codes": codes, "waveform": np.asarray(waves[0], dtype=np.float32)}


def official_call(tts, case: cases.TalkerCase, xvector: np.ndarray | None):
    """The wrapper call a user of the official package would make for this case (greedy)."""
    common = dict(cases.GREEDY, non_streaming_mode=case.non_streaming)
    variant = tts.model.tts_model_type
    if variant == "custom_voice":
        return lambda: tts.generate_custom_voice(
            text=case.text, speaker=case.speaker, language=case.language, instruct=case.instruct, **common
        )
    if variant == "voice_design":
        return lambda: tts.generate_voice_design(
            text=case.text, instruct=case.instruct, language=case.language, **common
        )
    if case.ref_text is not None:  # ICL: the wrapper encodes the audio and tokenizes the transcript
        return lambda: tts.generate_voice_clone(
            text=case.text,
            language=case.language,
            ref_audio=(reference_audio(), cases.SAMPLE_RATE),
            ref_text=case.ref_text,
            x_vector_only_mode=False,
            **common,
        )
    # x-vector only (no ICL): a ready prompt, so the Mimi encoder is not involved
    prompt = {
        "ref_code": [None],
        "ref_spk_embedding": [torch.from_numpy(xvector)],
        "x_vector_only_mode": [True],
        "icl_mode": [False],
    }
    return lambda: tts.generate_voice_clone(
        text=case.text, language=case.language, voice_clone_prompt=prompt, **common
    )


def codec_track_ids(tts, case: cases.TalkerCase) -> dict:
    """The language id actually used (after the dialect override) and the preset speaker's codec id."""
    config = tts.model.config.talker_config
    language_id = None if case.language == "auto" else config.codec_language_id[case.language]
    dialect = config.spk_is_dialect.get(case.speaker) if case.speaker else False
    if dialect and case.language in ("chinese", "auto"):
        language_id = config.codec_language_id[dialect]
    speaker_id = config.spk_id[case.speaker] if case.speaker else None
    if isinstance(speaker_id, list):
        speaker_id = speaker_id[0]
    return {"codec_language_id": language_id, "codec_speaker_id": speaker_id}


def talker_case(tts, case: cases.TalkerCase, xvector: np.ndarray | None) -> tuple[dict, dict]:
    run = talker_probe.capture_official(tts, official_call(tts, case, xvector))
    official_checks.check_chat_slicing(run.input_ids, tts.model.config)
    max_new_tokens = cases.GREEDY["max_new_tokens"]
    num_frames = run.codes.shape[0]
    stopped_by_eos = num_frames < max_new_tokens - 1
    if case.expect_eos != stopped_by_eos or (not case.expect_eos and num_frames < cases.MIN_FRAMES):
        raise CaseOutcomeError(
            f"{case.name}: {num_frames} frames, stopped by EOS: {stopped_by_eos}, "
            f"expected EOS: {case.expect_eos}; "
            f"the checkpoint weights changed, pick another text or instruct in cases.py"
        )
    replayed, margins = talker_probe.greedy_replay(
        tts.model, run, max_new_tokens, cases.GREEDY["repetition_penalty"]
    )
    if not torch.equal(replayed, run.codes):
        raise talker_probe.ReplayMismatchError(f"{case.name}: hand-written greedy loop != official generate")
    # an EOS run replays every step, up to the one whose logits choose EOS
    num_steps = num_frames if stopped_by_eos else cases.NUM_DECODE_STEPS
    arrays = talker_probe.teacher_forced(tts.model, run, num_steps, cases.NUM_PREDICTOR_FRAMES)
    codes = run.codes.numpy().astype(np.int64)
    arrays.update(
        input_ids=run.input_ids,
        prompt_embeds=run.prompt_embeds[0].numpy(),
        trailing_text=run.trailing_text[0].numpy(),
        tts_pad_embed=run.tts_pad_embed.reshape(-1).numpy(),
        decode_codes=codes[:num_steps],
        predictor_codes=codes[: cases.NUM_PREDICTOR_FRAMES],
        greedy_codes=codes,
        greedy_hidden=run.hidden.numpy(),
    )
    if run.instruct_ids is not None:
        arrays["instruct_ids"] = run.instruct_ids
    if xvector is not None:
        arrays["xvector"] = xvector
    icl_facts = {}
    if case.ref_text is not None:
        icl_arrays, icl_facts = icl_outputs(run, num_frames)
        arrays.update(icl_arrays)
    facts = {
        "text": case.text,
        "language": case.language,
        "speaker": case.speaker,
        "instruct": case.instruct,
        "non_streaming": case.non_streaming,
        "instruct_in_prompt": run.instruct_ids is not None,
        **codec_track_ids(tts, case),
        "num_frames": num_frames,
        "stopped_by_eos": stopped_by_eos,
        "min_top1_gap": margins,
        "ref_text": case.ref_text,
        **icl_facts,
    }
    return arrays, facts


def icl_outputs(run: talker_probe.OfficialRun, num_frames: int) -> tuple[dict, dict]:
    """What an ICL voice clone adds: the reference inputs the wrapper derived and its waveform.

    The wrapper decodes reference codes + generated codes in one go and cuts the reference part off
    at int(ref_frames / total_frames * samples), which `waveform_offset` records.
    """
    prompt = run.voice_clone_prompt
    ref_codes = prompt["ref_code"][0].numpy().astype(np.int64)
    waves, sample_rate = run.output
    total = ref_codes.shape[0] + num_frames
    offset = int(ref_codes.shape[0] / max(total, 1) * (total * 1920))
    arrays = {
        "ref_audio": reference_audio(),
        "ref_ids": run.ref_ids,
        "ref_codes": ref_codes,
        "xvector": prompt["ref_spk_embedding"][0].float().numpy(),
        "waveform": np.asarray(waves[0], dtype=np.float32),
    }
    facts = {"ref_sample_rate": cases.SAMPLE_RATE, "waveform_offset": offset, "sample_rate": sample_rate}
    return arrays, facts
