"""Write the golden fixtures (tests/fixtures/golden/) from the official Qwen3-TTS implementation.

Runs in the reference venv (torch, transformers, qwen-tts 0.1.1; see setup.sh). The checkpoints come
from the product's own `qwen3tts.model.tiny.write_checkpoint`, run by the product venv's python, and
the index records the sha256 of every checkpoint file so a test notices when they change.
The fixture format is described in README.md next to this file; fixture_writer.py writes the files,
official_outputs.py computes each case's arrays with the official code.

    python make_golden.py [--out DIR] [--product-python PY] [--checkpoint-root DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

import stubs

stubs.install()

import cases  # noqa: E402
import official_checks  # noqa: E402
import torch  # noqa: E402
from fixture_writer import FixtureWriter  # noqa: E402
from official_outputs import (  # noqa: E402
    codec_case,
    speaker_case,
    speech_encoder_case,
    talker_case,
    tokenizer_case,
)
from qwen_tts import Qwen3TTSModel  # noqa: E402

log = logging.getLogger("make_golden")
REPO = Path(__file__).resolve().parents[2]
WRITE_CHECKPOINT = (
    "import sys; from pathlib import Path; from qwen3tts.model.tiny import write_checkpoint; "
    "print(write_checkpoint(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])))"
)


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
