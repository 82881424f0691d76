"""Write the golden fixtures (tests/fixtures/golden/) from the official Qwen3-TTS implementation.

Runs in the reference venv (torch, transformers, qwen-tts 0.1.1; see setup.sh). The checkpoints come
from the product's own `qwen3tts.model.tiny.write_checkpoint`, run by the product venv's python, and
the index records the sha256 of every checkpoint file so a test notices when they change.
The fixture format is described in README.md next to this file.

    python make_golden.py [--out DIR] [--product-python PY] [--checkpoint-root DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import stubs

stubs.install()

import cases  # noqa: E402
import numpy as np  # noqa: E402
import official_checks  # noqa: E402
import talker_probe  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from qwen_tts import Qwen3TTSModel  # noqa: E402
from qwen_tts.core.models import modeling_qwen3_tts  # noqa: E402

log = logging.getLogger("make_golden")
REPO = Path(__file__).resolve().parents[2]
WRITE_CHECKPOINT = (
    "import sys; from pathlib import Path; from qwen3tts.model.tiny import write_checkpoint; "
    "print(write_checkpoint(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])))"
)


class CaseOutcomeError(RuntimeError):
    """A generation case did not behave as cases.py expects (EOS too early, or no EOS where wanted)."""


def write_checkpoint(product_python: Path, root: Path, checkpoint: cases.Checkpoint) -> Path:
    """Run the product's write_checkpoint in the product venv; return the checkpoint directory."""
    command = [
        str(product_python),
        "-c",
        WRITE_CHECKPOINT,
        str(root / checkpoint.name),
        checkpoint.variant,
        checkpoint.shape,
        str(checkpoint.seed),
    ]
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    return Path(result.stdout.strip().splitlines()[-1])


def file_hashes(directory: Path) -> dict[str, str]:
    """sha256 of every file under `directory`, keyed by its POSIX path relative to it."""
    return {
        path.relative_to(directory).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def load_official(directory: Path):
    tts = Qwen3TTSModel.from_pretrained(
        str(directory), device_map="cpu", dtype=torch.float32, attn_implementation="eager"
    )
    official_checks.check_weights_loaded(tts.model, directory / "model.safetensors")
    official_checks.check_weights_loaded(
        tts.model.speech_tokenizer.model, directory / "speech_tokenizer" / "model.safetensors"
    )
    return tts


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like np.savez_compressed, but with fixed zip timestamps: same arrays, same bytes, no git churn."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, value, allow_pickle=False)
            entry = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, buffer.getvalue())


class FixtureWriter:
    """Collects cases into <name>.npz files plus the index.json that describes them."""

    def __init__(self, out: Path):
        self.out = out
        self.records: list[dict] = []
        out.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, kind: str, checkpoint: cases.Checkpoint, arrays: dict, **facts) -> None:
        arrays = {key: np.ascontiguousarray(value) for key, value in arrays.items()}
        write_npz(self.out / f"{name}.npz", arrays)
        self.records.append(
            {
                "name": name,
                "kind": kind,
                "file": f"{name}.npz",
                "checkpoint": checkpoint.name,
                "variant": checkpoint.variant,
                "shape": checkpoint.shape,
                "seed": checkpoint.seed,
                **facts,
                "arrays": {
                    key: {"shape": list(value.shape), "dtype": str(value.dtype)}
                    for key, value in arrays.items()
                },
            }
        )
        log.info("wrote %s (%d bytes)", name, (self.out / f"{name}.npz").stat().st_size)

    def finish(self, checkpoints: dict[str, dict]) -> None:
        index = {
            "format_version": cases.FORMAT_VERSION,
            "generator": "scripts/reference/make_golden.py",
            "versions": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "numpy": np.__version__,
                "qwen_tts": _qwen_tts_version(),
            },
            "greedy": cases.GREEDY,
            "checkpoints": checkpoints,
            "cases": self.records,
        }
        (self.out / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")

    def publish(self, destination: Path) -> None:
        """Replace the fixtures in `destination` by the new set, only once all cases succeeded."""
        destination.mkdir(parents=True, exist_ok=True)
        for stale in [*destination.glob("*.npz"), destination / "index.json"]:
            stale.unlink(missing_ok=True)
        for path in sorted(self.out.iterdir()):
            shutil.copyfile(path, destination / path.name)


def _qwen_tts_version() -> str:
    from importlib.metadata import version

    return version("qwen-tts")


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


def _same_files(hashes: dict[str, str], names: tuple[str, ...]) -> tuple:
    return tuple(hashes.get(name) for name in names)


TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")
CODEC_FILES = ("speech_tokenizer/config.json", "speech_tokenizer/model.safetensors")


def generate(root: Path | None, product_python: Path, out: Path, scratch: Path) -> None:
    writer = FixtureWriter(scratch / "golden")
    index_checkpoints: dict[str, dict] = {}
    tokenizers_done, codecs_done, encoders_done = set(), set(), set()
    for checkpoint in cases.CHECKPOINTS:
        directory = root / checkpoint.name if root else write_checkpoint(product_python, scratch, checkpoint)
        hashes = file_hashes(directory)
        tts = load_official(directory)
        decoder = tts.model.speech_tokenizer.model.decoder
        index_checkpoints[checkpoint.name] = {
            "variant": checkpoint.variant,
            "shape": checkpoint.shape,
            "seed": checkpoint.seed,
            "files": hashes,
            **official_checks.check_talker_style(tts.model, checkpoint.shape),
            "codec_check": official_checks.check_codec_not_degenerate(decoder, decoder.config.codebook_size),
        }
        if _same_files(hashes, TOKENIZER_FILES) not in tokenizers_done:
            tokenizers_done.add(_same_files(hashes, TOKENIZER_FILES))
            writer.add(
                f"tokenizer-{checkpoint.name}",
                "tokenizer",
                checkpoint,
                tokenizer_case(tts),
                texts=list(cases.TOKENIZER_TEXTS),
            )
        if _same_files(hashes, CODEC_FILES) not in codecs_done:
            # the long decode once: all tiny shapes share one codec
            lengths = (cases.CODEC_SHORT_FRAMES,) + (() if codecs_done else (cases.CODEC_LONG_FRAMES,))
            codecs_done.add(_same_files(hashes, CODEC_FILES))
            for frames in lengths:
                writer.add(
                    f"codec-{checkpoint.name}-{frames}",
                    "codec",
                    checkpoint,
                    codec_case(tts, frames, cases.CODEC_SEED + frames),
                    num_frames=frames,
                )
        if checkpoint.variant == "base" and _same_files(hashes, CODEC_FILES) not in encoders_done:
            encoders_done.add(_same_files(hashes, CODEC_FILES))
            for rate in cases.SPEECH_ENCODER_RATES:
                writer.add(
                    f"speech_encoder-{checkpoint.name}-{rate}",
                    "speech_encoder",
                    checkpoint,
                    speech_encoder_case(tts, rate),
                    sample_rate=rate,
                )
        xvector = None
        if checkpoint.variant == "base":
            speaker = speaker_case(tts)
            xvector = speaker["xvector"]
            writer.add(
                f"speaker-{checkpoint.name}",
                "speaker_encoder",
                checkpoint,
                speaker,
                sample_rate=cases.SAMPLE_RATE,
            )
        for case in cases.TALKER_CASES:
            if case.checkpoint == checkpoint.name:
                arrays, facts = talker_case(tts, case, xvector)
                writer.add(case.name, "talker", checkpoint, arrays, **facts)
    writer.finish(index_checkpoints)
    writer.publish(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "golden")
    parser.add_argument(
        "--product-python",
        type=Path,
        default=REPO / ".venv" / "bin" / "python",
        help="python of the product venv, used to run qwen3tts.model.tiny.write_checkpoint",
    )
    parser.add_argument(
        "--checkpoint-root",
        type=Path,
        help="use checkpoints already written as ROOT/<checkpoint name>/ (development only)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="golden-ckpt-") as scratch:
        generate(args.checkpoint_root, args.product_python, args.out, Path(scratch))
    log.info("fixtures in %s", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
