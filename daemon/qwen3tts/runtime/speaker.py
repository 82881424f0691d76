"""Base-variant voice cloning input: a reference WAV -> 24 kHz mono -> log-mel -> x-vector.

Mirrors the official path `Qwen3TTSModel.create_voice_clone_prompt` -> `librosa.resample` ->
`Qwen3TTSForConditionalGeneration.extract_speaker_embedding` -> `mel_spectrogram` (all in qwen_tts),
in numpy, so the speaker encoder graph (model/graphs/speaker_encoder.py) sees the same features:

- Resampling: the official code calls `librosa.resample(res_type="soxr_hq", fix=True)`, i.e.
  `soxr.resample(quality="HQ")` on float32 and then trims / zero-pads to ceil(n * 24000 / rate)
  samples. We call soxr the same way, so the samples are identical (same soxr library).
- Mel: reflect-pad (n_fft - hop) / 2 = 384 samples each side, frames of 1024 every 256 samples
  (center=False), periodic Hann window, |STFT| = sqrt(re^2 + im^2 + 1e-9), librosa's Slaney-scale,
  Slaney-normalised 128-band filterbank over 0..12 kHz, then log(max(x, 1e-5)). No mean/variance
  normalisation follows.
"""

from __future__ import annotations

import functools
import logging
import math
from pathlib import Path

import numpy as np
import openvino as ov
import soxr

from qwen3tts.errors import RequestError
from qwen3tts.model.graphs.speaker_encoder import MELS, XVECTOR

logger = logging.getLogger(__name__)

SAMPLE_RATE = 24000  # extract_speaker_embedding only accepts 24 kHz
N_FFT = 1024
HOP_LENGTH = 256
NUM_MELS = 128
FMIN_HZ = 0.0
FMAX_HZ = 12000.0
MAGNITUDE_EPS = 1e-9  # added to |STFT|^2 before the square root
LOG_FLOOR = 1e-5  # dynamic_range_compression_torch clip value
# Below this the encoder's reflect paddings would exceed the number of frames; it is no voice anyway.
MIN_REFERENCE_SECONDS = 0.1
MAX_FILE_SECONDS = 60.0  # a reference file longer than this is refused before its samples are read


def resample_to_speaker_rate(wave: np.ndarray, sample_rate: int) -> np.ndarray:
    """float32 `wave` at 24 kHz, resampled exactly as `librosa.resample(..., res_type="soxr_hq")`."""
    wave = np.asarray(wave, dtype=np.float32)
    if sample_rate == SAMPLE_RATE:
        return wave
    if sample_rate <= 0:
        raise RequestError(f"reference audio sample rate must be positive, got {sample_rate}")
    resampled = soxr.resample(wave, sample_rate, SAMPLE_RATE, quality="HQ")
    # librosa's fix=True: exactly ceil(n * ratio) samples, trimming or zero-padding the end
    num_samples = math.ceil(wave.shape[0] * (float(SAMPLE_RATE) / sample_rate))
    if resampled.shape[0] >= num_samples:
        return np.ascontiguousarray(resampled[:num_samples], dtype=np.float32)
    return np.pad(resampled, (0, num_samples - resampled.shape[0])).astype(np.float32)


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney mel scale (librosa `hz_to_mel(htk=False)`): linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear_step = 200.0 / 3
    log_start_mel = 1000.0 / linear_step
    log_step = np.log(6.4) / 27.0
    safe = np.maximum(hz, 1000.0)  # keeps log() quiet where the linear branch is taken
    return np.where(hz >= 1000.0, log_start_mel + np.log(safe / 1000.0) / log_step, hz / linear_step)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    """Inverse of `_hz_to_mel` (librosa `mel_to_hz(htk=False)`)."""
    mel = np.asarray(mel, dtype=np.float64)
    linear_step = 200.0 / 3
    log_start_mel = 1000.0 / linear_step
    log_step = np.log(6.4) / 27.0
    log_part = 1000.0 * np.exp(log_step * (mel - log_start_mel))
    return np.where(mel >= log_start_mel, log_part, mel * linear_step)


@functools.cache
def mel_filterbank() -> np.ndarray:
    """[NUM_MELS, N_FFT/2 + 1] float32, as `librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128,
    fmin=0, fmax=12000)` (Slaney scale, Slaney area normalisation). Read-only; computed once."""
    fft_hz = np.fft.rfftfreq(N_FFT, d=1.0 / SAMPLE_RATE)
    edges_hz = _mel_to_hz(np.linspace(_hz_to_mel(FMIN_HZ), _hz_to_mel(FMAX_HZ), NUM_MELS + 2))
    widths = np.diff(edges_hz)
    ramps = edges_hz[:, None] - fft_hz[None, :]  # (NUM_MELS + 2, bins)
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    # librosa stores the triangles as float32 first, then scales them in place
    bank = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    bank *= (2.0 / (edges_hz[2:] - edges_hz[:-2]))[:, None]
    bank.setflags(write=False)
    return bank


def _periodic_hann(length: int) -> np.ndarray:
    """torch.hann_window(length) (periodic=True)."""
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(length) / length)


def mel_spectrogram(wave: np.ndarray, sample_rate: int) -> np.ndarray:
    """Log-mel features [T, 128] float32 of a mono waveform (floats in [-1, 1]) at any sample rate.

    T = n24 // 256 frames for n24 samples after resampling to 24 kHz. Raises RequestError for audio
    that is not 1-D, not finite or shorter than MIN_REFERENCE_SECONDS.
    """
    wave = np.asarray(wave)
    if wave.ndim != 1:
        raise RequestError(f"reference audio must be mono (1-D), got shape {wave.shape}")
    if not np.all(np.isfinite(wave)):
        raise RequestError("reference audio contains NaN or infinite samples")
    wave = resample_to_speaker_rate(wave, sample_rate)
    if wave.shape[0] < MIN_REFERENCE_SECONDS * SAMPLE_RATE:
        raise RequestError(
            f"reference audio is {wave.shape[0] / SAMPLE_RATE:.3f} s long; "
            f"at least {MIN_REFERENCE_SECONDS} s needed"
        )
    peak = float(np.max(np.abs(wave)))
    if peak > 1.0:
        logger.warning("reference audio exceeds [-1, 1] (peak %.3f); the x-vector may be off", peak)
    edge = (N_FFT - HOP_LENGTH) // 2
    padded = np.pad(wave.astype(np.float64), edge, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP_LENGTH]  # (T, N_FFT)
    spectrum = np.fft.rfft(frames * _periodic_hann(N_FFT), axis=-1)  # (T, N_FFT/2 + 1)
    magnitude = np.sqrt(spectrum.real**2 + spectrum.imag**2 + MAGNITUDE_EPS)
    mel = magnitude @ mel_filterbank().T.astype(np.float64)  # (T, NUM_MELS)
    return np.log(np.maximum(mel, LOG_FLOOR)).astype(np.float32)


class SpeakerEncoder:
    """Runs a compiled speaker encoder graph: waveform -> x-vector [enc_dim] (the Base voice vector).

    One infer request; not thread-safe (the engine thread owns it).
    """

    def __init__(self, compiled_model: ov.CompiledModel):
        self._request = compiled_model.create_infer_request()

    def xvector(self, wave: np.ndarray, sample_rate: int) -> np.ndarray:
        """The x-vector of mono `wave` sampled at `sample_rate` Hz, float32 [enc_dim]."""
        mels = mel_spectrogram(wave, sample_rate)
        self._request.infer({MELS: mels[None]})  # (1, T, 128)
        return np.array(self._request.get_tensor(XVECTOR).data[0], dtype=np.float32)

    def xvector_from_file(self, path: str | Path) -> np.ndarray:
        """The x-vector of a reference recording in any format libsndfile reads, checked before and
        while it is read (voices/reference_audio.py: regular file, length from the header, streamed,
        no silence, clipping or non-finite samples), between MIN_REFERENCE_SECONDS and 60 s."""
        from qwen3tts.voices.reference_audio import read_reference_audio

        wave, sample_rate = read_reference_audio(Path(path), MIN_REFERENCE_SECONDS, MAX_FILE_SECONDS)
        return self.xvector(wave, sample_rate)
