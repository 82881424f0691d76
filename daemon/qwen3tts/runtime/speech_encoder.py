"""Runs the compiled speech-tokenizer encoder (model/graphs/speech_encoder.py): audio -> codes.

Mirrors `Qwen3TTSTokenizer.encode` for one numpy input: resample to 24 kHz exactly as
`librosa.resample(res_type="soxr_hq")` does (runtime/speaker.py `resample_to_speaker_rate`), then the
encoder; ceil(samples / 1920) frames of 16 codes.
"""

from __future__ import annotations

import numpy as np
import openvino as ov

from qwen3tts.errors import RequestError
from qwen3tts.model.graphs.speech_encoder import AUDIO, CODES
from qwen3tts.runtime.speaker import MIN_REFERENCE_SECONDS, SAMPLE_RATE, resample_to_speaker_rate

MAX_REFERENCE_SECONDS = 60.0  # the official code has no limit; a minute is far more than a voice needs


class SpeechEncoder:
    """One infer request on a compiled speech encoder; not thread-safe."""

    def __init__(self, compiled_model: ov.CompiledModel):
        self._request = compiled_model.create_infer_request()

    def encode(self, wave: np.ndarray, sample_rate: int) -> np.ndarray:
        """Codes (frames, 16) i64 of mono float `wave` sampled at `sample_rate` Hz."""
        wave = resample_to_speaker_rate(wave, sample_rate)
        seconds = wave.shape[0] / SAMPLE_RATE
        if seconds < MIN_REFERENCE_SECONDS or seconds > MAX_REFERENCE_SECONDS:
            raise RequestError(
                f"reference audio is {seconds:.2f} s long; between {MIN_REFERENCE_SECONDS} and "
                f"{MAX_REFERENCE_SECONDS:.0f} s needed"
            )
        self._request.infer({AUDIO: wave[None]})
        return np.array(self._request.get_tensor(CODES).data[0], dtype=np.int64)
