"""Base voice cloning inputs: reference audio (+ its transcript) -> what a prompt needs, precomputed.

The official `Qwen3TTSModel.create_voice_clone_prompt` derives, from a reference recording:

- the x-vector (speaker encoder, runtime/speaker.py), used by both cloning modes;
- for ICL ("in-context learning", `x_vector_only_mode=False`, the official main mode): the
  reference's speech-tokenizer codes (runtime/speech_encoder.py) and its transcript's token ids.

`VoiceInputs` holds exactly these, can be saved with numpy and loaded again (a voice registry stores
them once per voice), and `runtime/prompt.py` builds the talker prompt from them. `VoiceEncoder`
computes them from samples; `read_audio` reads a reference file in any format soundfile knows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwen3tts.errors import AudioError, RequestError
from qwen3tts.model.tokenizer import TextTokenizer
from qwen3tts.voices.reference_audio import read_reference_audio

logger = logging.getLogger(__name__)

_ARRAYS = ("xvector", "ref_codes", "ref_text_ids")
MIN_REFERENCE_S, MAX_REFERENCE_S = 0.1, 60.0  # what the speaker encoder takes (a reference at request time)


@dataclass(frozen=True)
class VoiceInputs:
    """The voice-dependent inputs of a Base prompt. ICL when reference codes and text ids are present."""

    xvector: np.ndarray  # (H,) f32: the speaker-slot vector
    ref_codes: np.ndarray | None = None  # (F, 16) i64: reference audio codes, 12.5 frames per second
    ref_text_ids: np.ndarray | None = None  # (R,) i64: reference transcript ids, without chat framing

    def __post_init__(self):
        if (self.ref_codes is None) != (self.ref_text_ids is None):
            raise RequestError("ICL voice inputs need both reference codes and reference text ids")
        if np.ndim(self.xvector) != 1:
            raise RequestError(f"x-vector must be one vector, got shape {np.shape(self.xvector)}")
        if self.ref_codes is not None:
            if np.ndim(self.ref_codes) != 2 or len(self.ref_codes) == 0:
                raise RequestError(
                    f"reference codes must be (frames, groups), got {np.shape(self.ref_codes)}"
                )
            if np.ndim(self.ref_text_ids) != 1 or len(self.ref_text_ids) == 0:
                raise RequestError("reference text ids must be a non-empty vector")

    @property
    def icl(self) -> bool:
        return self.ref_codes is not None

    def save(self, path: str | Path) -> None:
        """Write the arrays to one .npz file (no pickles)."""
        arrays = {name: getattr(self, name) for name in _ARRAYS if getattr(self, name) is not None}
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> VoiceInputs:
        """Read what `save` wrote; a file that is not one is a RequestError naming it."""
        try:
            with np.load(path, allow_pickle=False) as data:
                found = {name: data[name] for name in data.files}
        except (OSError, ValueError) as exc:
            raise RequestError(f"{path}: not a saved voice ({exc})") from exc
        unknown = set(found) - set(_ARRAYS)
        if "xvector" not in found or unknown:
            raise RequestError(f"{path}: not a saved voice (arrays {sorted(found)})")
        return cls(
            xvector=found["xvector"].astype(np.float32),
            ref_codes=found["ref_codes"].astype(np.int64) if "ref_codes" in found else None,
            ref_text_ids=found["ref_text_ids"].astype(np.int64) if "ref_text_ids" in found else None,
        )


def read_audio(path: str | Path) -> tuple[np.ndarray, int]:
    """A reference recording in any format libsndfile reads (WAV, FLAC, OGG, MP3...): float32 mono
    samples (channels averaged, as the official loader does) and the sample rate.

    Checked as `voice add` checks it (voices/reference_audio.py: a regular file, its length from the
    header before reading, no silence, clipping or non-finite samples), 0.1 to 60 s as the speaker
    encoder takes; a bad file is a RequestError for the request that names it.
    """
    try:
        return read_reference_audio(Path(path), MIN_REFERENCE_S, MAX_REFERENCE_S)
    except AudioError as exc:
        raise RequestError(f"reference audio: {exc}") from None


class VoiceEncoder:
    """(samples, rate, transcript) -> VoiceInputs with the bundle's compiled encoders and tokenizer.

    `speaker` is a runtime.speaker.SpeakerEncoder, `speech` a runtime.speech_encoder.SpeechEncoder
    (None for a bundle built without one: then only x-vector voices). Not thread-safe.
    """

    def __init__(self, speaker, speech, tokenizer: TextTokenizer):
        self.speaker = speaker
        self.speech = speech
        self.tokenizer = tokenizer

    def encode(self, samples: np.ndarray, sample_rate: int, transcript: str | None = None) -> VoiceInputs:
        """The x-vector, plus (with a transcript) the reference codes and transcript ids for ICL."""
        samples = _checked_samples(samples, sample_rate)
        xvector = self.speaker.xvector(samples, sample_rate)
        if transcript is None:
            return VoiceInputs(xvector)
        transcript = transcript.strip()
        if not transcript:
            raise RequestError("the reference transcript is empty (ICL cloning needs what the audio says)")
        if self.speech is None:
            raise RequestError("this bundle has no speech encoder: rebuild it for ICL voice cloning")
        codes = self.speech.encode(samples, sample_rate)
        text_ids = np.asarray(self.tokenizer.encode_ref_text(transcript), np.int64)
        logger.info("voice inputs: %d reference frames, %d transcript tokens", len(codes), len(text_ids))
        return VoiceInputs(xvector, codes, text_ids)

    def encode_file(self, path: str | Path, transcript: str | None = None) -> VoiceInputs:
        samples, rate = read_audio(path)
        return self.encode(samples, rate, transcript)


def _checked_samples(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim == 2:  # (samples, channels), as soundfile returns
        samples = samples.mean(axis=1)
    if samples.ndim != 1 or samples.size == 0:
        raise RequestError(f"reference audio must be mono samples, got shape {samples.shape}")
    if not np.all(np.isfinite(samples)):
        raise RequestError("reference audio holds NaN or infinite samples")
    if not isinstance(sample_rate, int | np.integer) or sample_rate <= 0:
        raise RequestError(f"reference audio sample rate must be a positive integer, got {sample_rate!r}")
    return samples
