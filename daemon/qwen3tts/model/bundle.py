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
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qwen3tts.errors import BundleError
from qwen3tts.model import spec as spec_types
from qwen3tts.model.spec import ModelSpec
from qwen3tts.model.tiny_config import RANDOM_WEIGHTS_KEY

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


def codec_samples_xml(frames: int) -> str:
    """Split codec layout: the static sample part of a `frames` chunk."""
    return f"codec_samples_{frames}.xml"


def codec_graph_files(manifest: Manifest) -> tuple[str | None, dict[int, str]]:
    """(the frame part, or None in the whole layout; chunk size -> its graph) of the bundle's codec."""
    if manifest.codec_layout == CODEC_SPLIT:
        return CODEC_FRAMES_XML, {f: codec_samples_xml(f) for f in manifest.codec_chunks}
    if manifest.codec_layout == CODEC_WHOLE:
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
    if verify_files:
        verify_bundle_files(bundle_dir, manifest)
    return manifest


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
    hints = typing.get_type_hints(cls, vars(spec_types))
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
        return tuple(value)
    return value
