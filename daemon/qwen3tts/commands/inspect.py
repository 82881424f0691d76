"""`qwen3tts inspect DIR`: what a checkpoint or bundle declares (variant, shapes, voices, languages),
with every file's sha256 checked: a bundle against its manifest, a checkpoint's files listed with
their sha256 (compare them with the ones Hugging Face shows for the release's files)."""

from __future__ import annotations

import argparse
from pathlib import Path

from qwen3tts.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="checkpoint directory (config.json inside) or bundle")


def inspect(args: argparse.Namespace, settings: Settings) -> int:
    if (args.path / "manifest.json").exists():
        from qwen3tts.model.bundle import describe_bundle, read_manifest

        print(describe_bundle(args.path, verify_files=True))  # raises BundleError naming each bad file
        files = read_manifest(args.path, verify_files=False).files
        print(f"  sha256: all {len(files)} files match the manifest")
        return 0
    from qwen3tts.model.build import SOURCE_FILES
    from qwen3tts.model.bundle import has_random_weights, weights_label
    from qwen3tts.model.checkpoint import load_checkpoint

    checkpoint = load_checkpoint(args.path)
    spec = checkpoint.spec
    talker, predictor, codec = spec.talker, spec.code_predictor, spec.codec
    weights = weights_label(has_random_weights(args.path))
    print(f"checkpoint {args.path}: {spec.variant}, size {spec.size}, {weights} weights")
    print(
        f"  talker: {talker.num_hidden_layers} layers, hidden {talker.hidden_size}, "
        f"heads {talker.num_attention_heads}/{talker.num_key_value_heads}, codec vocab {talker.vocab_size}"
    )
    print(
        f"  code predictor: {predictor.num_hidden_layers} layers, hidden {predictor.hidden_size}, "
        f"input projection {'yes' if predictor.has_input_projection else 'no'}"
    )
    print(
        f"  codec: {codec.num_quantizers} codebooks x {codec.codebook_size}, {codec.sample_rate} Hz, "
        f"{codec.decode_upsample_rate} samples/frame"
    )
    print(f"  speakers: {', '.join(spec.speakers) or '-'}")
    print(f"  languages: {', '.join(spec.languages) or '-'}")
    print(
        f"  instruct: {'yes' if spec.supports_instruct else 'no'}; "
        f"speaker encoder: {'yes' if spec.speaker_encoder else 'no'}"
    )
    print("  sha256:")
    for name in SOURCE_FILES:
        print(f"    {checkpoint.file_sha256(name)}  {name}")
    return 0
