"""The voice registry: one directory per named voice, everything derived from it precomputed.

    <dir>/<name>/voice.json     kind, bundle hash, transcript, instruct, flags, sha256 of each array
    <dir>/<name>/xvector.npy    (enc_dim,) f32 x-vector of the reference          (clone voices)
    <dir>/<name>/reference.npy  (n,) f32 reference audio at 24 kHz                 (clone voices)
    <dir>/<name>/ref_codes.npy  (frames, 16) i64 reference codes for ICL           (when encoded)

A voice is made for one bundle (its `bundle_hash`): an x-vector or reference codes from another model
mean nothing to this one, so get() refuses a voice made for another bundle with a clear message.
Names are validated before any path is built (`[A-Za-z0-9._-]{1,64}`, not starting with a dot), so
a name from MQTT can only ever select a voice; no path comes from outside. A voice is written into a
hidden temporary directory and renamed into place: a crash never leaves half a voice.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

FORMAT = 1
VOICE_JSON = "voice.json"
ARRAYS = ("xvector", "reference", "ref_codes")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
# A reference is at most 30 s; fast speech is ~20 characters a second, so 1,000 leaves room for any
# language and rejects a pasted document (a 100,000-character transcript).
MAX_TRANSCRIPT_CHARS = 1_000
MAX_TRANSCRIPT_SECONDS = 30
Kind = Literal["clone", "design"]


class VoiceError(RequestError):
    """A voice name is invalid, unknown, made for another bundle, or its files are damaged."""


@dataclass(frozen=True)
class RegisteredVoice:
    """What a request needs to speak with a named voice (arrays are read-only)."""

    name: str
    kind: Kind  # clone: from reference audio (Base bundles); design: a VoiceDesign description
    bundle_hash: str
    x_vector_only: bool = False  # clone without the transcript in the prompt (no ICL)
    ref_text: str | None = None  # transcript of the reference audio (clone, ICL)
    instruct: str | None = None  # the VoiceDesign description (design)
    xvector: np.ndarray | None = None  # (enc_dim,) f32
    ref_audio: np.ndarray | None = None  # (n,) f32 at 24 kHz
    ref_codes: np.ndarray | None = None  # (frames, 16) i64, from the speech tokenizer's encoder

    @property
    def uses_icl(self) -> bool:
        """Reference text and codes go into the prompt (official x_vector_only_mode=False)."""
        return self.kind == "clone" and not self.x_vector_only and self.ref_codes is not None


def validate_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.startswith("."):
        raise VoiceError(
            f"invalid voice name {str(name)[:80]!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
            "not starting with '.'"
        )
    return name


def validate_transcript(text: object) -> str:
    """The reference transcript, stripped; VoiceError when it is not text one can store and say.

    Every ICL request carries it in its prompt, so it is bounded like the recording (30 s of speech
    is a few hundred characters). Command-line bytes that are not UTF-8 arrive as lone surrogates.
    """
    if not isinstance(text, str):
        raise VoiceError(f"the transcript must be text, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise VoiceError(f"the transcript is not valid UTF-8 (at character {exc.start})") from None
    text = text.strip()
    if len(text) > MAX_TRANSCRIPT_CHARS:
        raise VoiceError(
            f"the transcript is {len(text)} characters; at most {MAX_TRANSCRIPT_CHARS} "
            f"(what {MAX_TRANSCRIPT_SECONDS:g} s of speech can say)"
        )
    control = next((ch for ch in text if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r"), None)
    if control is not None:
        raise VoiceError(f"the transcript holds the control character U+{ord(control):04X}")
    if not text:
        raise VoiceError("the transcript is empty (ICL cloning needs what the recording says)")
    return text


def bundle_hash(bundle_dir: Path) -> str:
    """SHA-256 over the bundle manifest's file hashes: changes whenever any graph or table changes."""
    from qwen3tts.model.bundle import read_manifest

    files = read_manifest(Path(bundle_dir), verify_files=False).files
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def voices_dir(settings) -> Path:
    """Where the registry lives: next to the durable spool (the state directory under systemd).

    The one place that decides it, so it can follow a state-directory helper later.
    """
    return Path(settings.announcements.spool_dir).parent / "voices"


class VoiceRegistry:
    """`VoiceRegistry(dir)`: add / get(name, bundle_hash) / names() / remove; read by name only."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        # name -> (identity of its voice.json, the voice): a request re-reads nothing unless it changed
        self._loaded: dict[str, tuple[tuple[int, int, int], RegisteredVoice]] = {}

    def names(self, bundle_hash: str | None = None) -> list[str]:
        """Sorted names of the stored voices; with `bundle_hash`, only those made for that bundle."""
        if not self.directory.is_dir():
            return []
        found = []
        for entry in self.directory.iterdir():
            name = entry.name
            if not (_NAME.fullmatch(name) and not name.startswith(".") and (entry / VOICE_JSON).is_file()):
                continue
            if bundle_hash is not None:
                try:
                    if self._read_meta(name)["bundle_hash"] != bundle_hash:
                        continue
                except VoiceError:
                    continue
            found.append(name)
        return sorted(found)

    def get(self, name: str, bundle_hash: str) -> RegisteredVoice:
        """The voice `name` for the bundle `bundle_hash`; VoiceError when unknown, foreign or damaged."""
        voice = self._load(name)
        if voice.bundle_hash != bundle_hash:
            raise VoiceError(
                f"voice {name!r} was made for another model bundle ({voice.bundle_hash[:12]}, this one is "
                f"{bundle_hash[:12]}); add it again with `qwen3tts voice add`"
            )
        return voice

    def _load(self, name: str) -> RegisteredVoice:
        """Read once; again only when voice.json was replaced (add --replace renames a new directory)."""
        try:
            st = (self.directory / validate_name(name) / VOICE_JSON).stat()
            identity = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            identity = None
        cached = self._loaded.get(name)
        if identity is not None and cached is not None and cached[0] == identity:
            return cached[1]
        meta = self._read_meta(name)
        arrays = {key: self._read_array(name, key, meta) for key in ARRAYS}
        voice = RegisteredVoice(
            name=name,
            kind=meta["kind"],
            bundle_hash=meta["bundle_hash"],
            x_vector_only=bool(meta.get("x_vector_only", False)),
            ref_text=meta.get("ref_text"),
            instruct=meta.get("instruct"),
            xvector=arrays["xvector"],
            ref_audio=arrays["reference"],
            ref_codes=arrays["ref_codes"],
        )
        if identity is not None:
            self._loaded[name] = (identity, voice)
        return voice

    def add(self, voice: RegisteredVoice, replace: bool = False) -> Path:
        """Store `voice` atomically; VoiceError if the name exists (unless `replace`)."""
        name = validate_name(voice.name)
        if voice.ref_text is not None:
            validate_transcript(voice.ref_text)
        target = self.directory / name
        if target.exists() and not replace:
            raise VoiceError(f"voice {name!r} exists; remove it first (`qwen3tts voice remove {name}`)")
        self.directory.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=self.directory))
        try:
            files = {}
            arrays = {"xvector": voice.xvector, "reference": voice.ref_audio, "ref_codes": voice.ref_codes}
            for key, array in arrays.items():
                if array is not None:
                    files[key] = _write_array(staging / f"{key}.npy", array)
            meta = {
                "format": FORMAT,
                "name": name,
                "kind": voice.kind,
                "bundle_hash": voice.bundle_hash,
                "x_vector_only": voice.x_vector_only,
                "ref_text": voice.ref_text,
                "instruct": voice.instruct,
                "files": files,
            }
            (staging / VOICE_JSON).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
            old = None
            if replace and target.exists():  # moved aside, not deleted: a crash keeps one of the two
                old = Path(tempfile.mkdtemp(prefix=f".old-{name}-", dir=self.directory))
                os.rename(target, old / name)
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        log.info("voice %s added (%s, bundle %s)", name, voice.kind, voice.bundle_hash[:12])
        return target

    def remove(self, name: str) -> None:
        target = self.directory / validate_name(name)
        if not (target / VOICE_JSON).is_file():
            raise VoiceError(f"no voice named {name!r}")
        shutil.rmtree(target)
        self._loaded.pop(name, None)
        log.info("voice %s removed", name)

    # ---- reading ----

    def _read_meta(self, name: str) -> dict:
        path = self.directory / validate_name(name) / VOICE_JSON
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            known = ", ".join(self.names()) or "none registered"
            raise VoiceError(f"unknown voice {name!r} (known: {known})") from None
        except (OSError, ValueError) as exc:
            raise VoiceError(f"voice {name!r} is damaged: {path.name}: {exc}") from None
        if (
            not isinstance(meta, dict)
            or meta.get("format") != FORMAT
            or meta.get("kind") not in ("clone", "design")
        ):
            raise VoiceError(f"voice {name!r} is damaged or from another version: {path.name}")
        if not isinstance(meta.get("bundle_hash"), str) or not isinstance(meta.get("files"), dict):
            raise VoiceError(f"voice {name!r} is damaged: {path.name} lacks bundle_hash or files")
        return meta

    def _read_array(self, name: str, key: str, meta: dict) -> np.ndarray | None:
        expected = meta["files"].get(key)
        if expected is None:
            return None
        try:
            data = (self.directory / name / f"{key}.npy").read_bytes()
        except OSError as exc:
            raise VoiceError(f"voice {name!r} is damaged: {key}.npy: {exc.strerror or exc}") from None
        if hashlib.sha256(data).hexdigest() != expected:
            raise VoiceError(f"voice {name!r} is damaged: {key}.npy does not match its checksum")
        array = np.load(io.BytesIO(data), allow_pickle=False)
        array.setflags(write=False)
        return array


def _write_array(path: Path, array: np.ndarray) -> str:
    """Save without pickles; returns the file's sha256 (checked on every read)."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    data = buffer.getvalue()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()
