"""The OpenVINO bundle on disk: graphs, tables, tokenizer files and a manifest that vouches for them.

A bundle is written once by `qwen3tts build` and read at every start. manifest.json records the
format version, the model spec, the precision policy, the tool versions that built it, the sha256
of every source checkpoint file, and the sha256 of every bundle file. Loading checks all of it and
says exactly which file or field does not match: a half-copied bundle must not start speaking noise.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qwen3tts.errors import BundleError
from qwen3tts.model import spec as spec_types
from qwen3tts.model.spec import ModelSpec
from qwen3tts.model.tiny.config import RANDOM_WEIGHTS_KEY

FORMAT = "qwen3tts-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"

# File names inside a bundle, in one place.
TALKER_XML = "talker.xml"
CODE_PREDICTOR_XML = "code_predictor.xml"
SPEAKER_ENCODER_XML = "speaker_encoder.xml"
SPEECH_ENCODER_XML = "speech_encoder.xml"  # Base: reference audio -> codes, for ICL voice cloning
PREDICTOR_TABLES = "predictor_tables.npy"  # Base: code predictor codec tables [15, codebook, talker_hidden]
TEXT_TABLE = "text_table.npy"  # projected text embeddings [text_vocab, talker_hidden]
CODEC_EMBEDDING = "codec_embedding.npy"  # talker codec embedding [codec_vocab, talker_hidden]
TOKENIZER_DIR = "tokenizer"


CODEC_FRAMES_XML = "codec_frames.xml"  # split codec layout: the frame part, dynamic frame axis
CODEC_SPLIT, CODEC_WHOLE = "split", "whole"  # manifest codec_layout values


def codec_chunk_xml(frames: int) -> str:
    """Whole codec layout (older bundles): one static codes -> audio graph per chunk size."""
    return f"codec_chunk_{frames}.xml"


@dataclass(frozen=True)
class CodecVariant:
    """Lossy codec sample parts kept beside the exact ones because they passed the SNR gate at build time.

    The exact f32 graphs are always in the bundle. A variant only changes convolutions near the output,
    which lie in the split layout's sample part, so it is one alternative sample part per chunk size
    (`codec_samples_xml(frames, name)`) sharing the exact frame part; the device plan may pick it on a
    CPU that offers everything in `needs`. Only split-layout bundles carry variants.
    """

    name: str  # "bf16-tail"
    needs: tuple[str, ...]  # the CPU's OPTIMIZATION_CAPABILITIES it needs to be faster, e.g. ("BF16",)
    snr_db: float  # measured at build time on held-out codes against the exact graphs of this bundle
    min_snr_db: float  # the gate it passed
    bf16_convs: tuple[str, ...] = ()  # modules whose convolution runs in bf16
    total_convs: int = 0  # convolutions in the decoder (frame part + sample part)

    def describe(self) -> str:
        return (
            f"{self.name} (bf16 in the last {len(self.bf16_convs)} of {self.total_convs} convolutions, "
            f"{self.snr_db:.1f} dB SNR vs exact, gate {self.min_snr_db:.0f} dB, needs {'+'.join(self.needs)})"
        )


def codec_samples_xml(frames: int, variant: str | None = None) -> str:
    """Split codec layout: the static sample part of a `frames` chunk, exact or of a lossy variant."""
    return f"codec_samples_{frames}.xml" if variant is None else f"codec_samples_{frames}.{variant}.xml"


def codec_graph_files(manifest: Manifest, variant: str | None = None) -> tuple[str | None, dict[int, str]]:
    """(the frame part, or None in the whole layout; chunk size -> its graph) of the bundle's codec,
    with the sample parts of `variant` (a `CodecVariant.name`) instead of the exact ones if given."""
    if manifest.codec_layout == CODEC_SPLIT:
        return CODEC_FRAMES_XML, {f: codec_samples_xml(f, variant) for f in manifest.codec_chunks}
    if manifest.codec_layout == CODEC_WHOLE:
        if variant is not None:
            raise BundleError(f"codec variant {variant}: whole-layout bundles load only their exact graphs")
        return None, {f: codec_chunk_xml(f) for f in manifest.codec_chunks}
    raise BundleError(
        f"codec_layout {manifest.codec_layout!r} is unknown to this qwen3tts; "
        "rebuild the bundle with `qwen3tts build`"
    )


def codec_xmls(manifest: Manifest) -> tuple[str, ...]:
    """Every codec graph of the bundle."""
    frames, chunks = codec_graph_files(manifest)
    return (*([frames] if frames else []), *chunks.values())


@dataclass(frozen=True)
class Manifest:
    """What a bundle declares about itself (manifest.json)."""

    spec: ModelSpec
    precision: dict[str, str]  # component -> int8 | f16 | f32
    codec_chunks: tuple[int, ...]  # static chunk sizes (frames) of the streaming decoder graphs
    versions: dict[str, str]  # qwen3tts, openvino, nncf
    source_files: dict[str, str]  # checkpoint-relative path -> sha256
    files: dict[str, str]  # bundle-relative path -> sha256
    random_weights: bool = False  # built from a `qwen3tts tiny` checkpoint: it babbles, it is no voice
    codec_layout: str = CODEC_WHOLE  # split (frame part + sample parts) or whole (absent: older bundles)
    codec_variants: tuple[CodecVariant, ...] = ()  # lossy alternatives to the exact codec, fastest first


def has_random_weights(checkpoint_dir: Path) -> bool:
    """True for a checkpoint `qwen3tts tiny` wrote (its config.json carries the marker)."""
    try:
        config = json.loads((Path(checkpoint_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get(RANDOM_WEIGHTS_KEY) is True


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(bundle_dir: Path, manifest_fields: dict[str, Any]) -> Manifest:
    """Hash every file already in `bundle_dir` and write manifest.json last (its presence means done)."""
    bundle_dir = Path(bundle_dir)
    files = {
        str(p.relative_to(bundle_dir)): sha256_file(p)
        for p in sorted(bundle_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    manifest = Manifest(files=files, **manifest_fields)
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, **_to_plain(manifest)}
    (bundle_dir / MANIFEST).write_text(
        json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest


def read_manifest(bundle_dir: Path, verify_files: bool = True) -> Manifest:
    """Parse manifest.json and (by default) check every file's sha256; BundleError names what differs."""
    bundle_dir = Path(bundle_dir)
    path = bundle_dir / MANIFEST
    if not path.is_file():
        raise BundleError(f"{bundle_dir}: no {MANIFEST}; build one with `qwen3tts build`")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path}: unreadable manifest: {exc}") from exc
    if document.get("format") != FORMAT:
        raise BundleError(f"{path}: format is {document.get('format')!r}, expected {FORMAT!r}")
    if document.get("format_version") != FORMAT_VERSION:
        raise BundleError(
            f"{path}: format_version {document.get('format_version')!r}, this qwen3tts reads "
            f"{FORMAT_VERSION}; rebuild the bundle with `qwen3tts build`"
        )
    try:
        manifest = _from_plain(Manifest, document, "manifest")
    except (KeyError, TypeError, ValueError) as exc:
        raise BundleError(f"{path}: malformed manifest: {exc}") from exc
    _check_codec_variants(path, manifest)
    if verify_files:
        verify_bundle_files(bundle_dir, manifest)
    return manifest


def loadable_codec_variants(manifest: Manifest) -> tuple[CodecVariant, ...]:
    """The variants a loader may pick: only the split layout's (variant sample parts); a whole-layout
    bundle (built before the split) loads its exact graphs whatever its manifest lists."""
    return manifest.codec_variants if manifest.codec_layout == CODEC_SPLIT else ()


def _check_codec_variants(path: Path, manifest: Manifest) -> None:
    """A variant's name becomes file names: a plain word, and every sample part of it hashed above."""
    for variant in manifest.codec_variants:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", variant.name):
            raise BundleError(f"{path}: codec variant name {variant.name!r} is not a plain lower-case word")
        if variant not in loadable_codec_variants(manifest):
            continue  # never loaded (see loadable_codec_variants), so its files are not looked for
        _, graphs = codec_graph_files(manifest, variant.name)
        missing = [xml for xml in graphs.values() if xml not in manifest.files]
        if missing:
            raise BundleError(
                f"{path}: codec variant {variant.name}: {missing[0]} is not in the manifest's files"
            )


def verify_bundle_files(bundle_dir: Path, manifest: Manifest) -> None:
    problems = []
    for name, expected in sorted(manifest.files.items()):
        file = bundle_dir / name
        if not file.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(file) != expected:
            problems.append(f"{name}: sha256 differs from the manifest (corrupt or replaced)")
    if problems:
        raise BundleError(f"{bundle_dir}: " + "; ".join(problems))


def describe_bundle(bundle_dir: Path, verify_files: bool = False) -> str:
    """What `inspect` and `build` print; with `verify_files` every sha256 is checked first."""
    manifest = read_manifest(bundle_dir, verify_files=verify_files)
    spec = manifest.spec
    size = sum((Path(bundle_dir) / name).stat().st_size for name in manifest.files)
    lines = [
        f"bundle {bundle_dir}: {spec.variant}, size {spec.size}, "
        f"{len(manifest.files)} files, {size / 1e6:.1f} MB",
        f"  weights: {weights_kind(manifest)}",
        f"  precision: {', '.join(f'{k} {v}' for k, v in sorted(manifest.precision.items()))}",
        f"  codec chunks: {', '.join(map(str, manifest.codec_chunks))} frames ({manifest.codec_layout})",
        f"  codec variants: f32 (exact){''.join(', ' + v.describe() for v in manifest.codec_variants)}",
        f"  built with: {', '.join(f'{k} {v}' for k, v in sorted(manifest.versions.items()))}",
        f"  speakers: {', '.join(spec.speakers) or '-'}",
        f"  languages: {', '.join(spec.languages) or '-'}",
    ]
    return "\n".join(lines)


def weights_kind(manifest: Manifest) -> str:
    """'random (qwen3tts tiny)' or 'release' — for inspect, the start-up log and the MQTT status."""
    return weights_label(manifest.random_weights)


def weights_label(random_weights: bool) -> str:
    return "random (qwen3tts tiny)" if random_weights else "release"


def _to_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    return value


def _from_plain(cls: type, data: Any, path: str) -> Any:
    """Rebuild a (nested) frozen dataclass from JSON; tuples and Optional sections included."""
    hints = typing.get_type_hints(cls, vars(spec_types), {"CodecVariant": CodecVariant})
    kwargs = {}
    for item in dataclasses.fields(cls):
        if item.name not in data:
            if item.default is not dataclasses.MISSING or item.default_factory is not dataclasses.MISSING:
                continue
            raise KeyError(f"{path}.{item.name}")
        kwargs[item.name] = _value_from_plain(hints[item.name], data[item.name], f"{path}.{item.name}")
    return cls(**kwargs)


def _value_from_plain(hint: Any, value: Any, path: str) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if value is None:
        return None
    if dataclasses.is_dataclass(hint):
        return _from_plain(hint, value, path)
    if args and dataclasses.is_dataclass(args[0]) and len(args) == 1:
        return _from_plain(args[0], value, path)
    if typing.get_origin(hint) is tuple:
        if args and dataclasses.is_dataclass(args[0]):  # tuple[SomeDataclass, ...]
            if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
                raise TypeError(f"{path}: expected a list of objects")
            return tuple(_from_plain(args[0], item, f"{path}[{i}]") for i, item in enumerate(value))
        return tuple(value)
    return value


def decode_weight_bytes(bundle_dir: Path) -> int:
    """The bytes of the talker's and code predictor's weight files: how much a decode step reads."""
    return sum(
        (Path(bundle_dir) / xml).with_suffix(".bin").stat().st_size
        for xml in (TALKER_XML, CODE_PREDICTOR_XML)
    )
