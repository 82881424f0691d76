"""Write tests/fixtures/speaker_expectations.npz: the official mel spectrogram and x-vector of the Base
speaker encoder for two fixed synthetic waveforms (24 kHz, and 16 kHz to exercise resampling).

Runs in the reference venv (torch, transformers, qwen-tts 0.1.1). The checkpoint is the product's own
`qwen3tts.model.tiny.write_checkpoint(dir, variant="base", shape="tiny", seed=0)`, written by the
product venv's python; the sha256 of its model.safetensors is stored so the test notices a change.
The x-vector is taken through the official wrapper path `Qwen3TTSModel.create_voice_clone_prompt(
x_vector_only_mode=True)` (librosa resampling + extract_speaker_embedding); the mel is the exact input
the speaker encoder received, captured with a forward pre-hook.

    scripts/reference/.venv/bin/python scripts/reference/speaker_expectations.py \
        [--out FILE] [--product-python PY]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import stubs

stubs.install()

import librosa  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from qwen_tts import Qwen3TTSModel  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "fixtures" / "speaker_expectations.npz"
CHECKPOINT = {"variant": "base", "shape": "tiny", "seed": 0}
WRITE_CHECKPOINT = (
    "import sys; from qwen3tts.model.tiny import write_checkpoint; "
    "print(write_checkpoint(sys.argv[1], variant='base', shape='tiny', seed=0))"
)
SECONDS = 2.0
VERSIONED = ("torch", "qwen-tts", "librosa", "soxr")


def synthetic_voice(sample_rate: int, seed: int) -> np.ndarray:
    """2 s of two sines plus seeded noise, peak well inside [-1, 1], float32."""
    t = np.arange(int(SECONDS * sample_rate)) / sample_rate
    noise = np.random.default_rng(seed).standard_normal(t.shape[0])
    wave = 0.3 * np.sin(2 * np.pi * 220.0 * t) + 0.1 * np.sin(2 * np.pi * 1234.0 * t) + 0.05 * noise
    return wave.astype(np.float32)


def official_xvector(tts, wave: np.ndarray, sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
    """(mel [T, 128], x-vector [enc_dim]) through the official voice-clone prompt path."""
    captured = []
    hook = tts.model.speaker_encoder.register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
    try:
        items = tts.create_voice_clone_prompt(ref_audio=(wave, sample_rate), x_vector_only_mode=True)
    finally:
        hook.remove()
    (mels,) = captured
    return mels[0].float().numpy(), items[0].ref_spk_embedding.float().numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--product-python", type=Path, default=REPO / ".venv" / "bin" / "python")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(args.product_python), "-c", WRITE_CHECKPOINT, tmp], check=True)
        weights = Path(tmp) / "model.safetensors"
        sha256 = hashlib.sha256(weights.read_bytes()).hexdigest()
        tts = Qwen3TTSModel.from_pretrained(tmp, device_map="cpu", dtype=torch.float32)
        arrays = {}
        for rate, seed in ((24000, 1), (16000, 2)):
            wave = synthetic_voice(rate, seed)
            mel, xvector = official_xvector(tts, wave, rate)
            tag = f"{rate // 1000}k"
            arrays.update({f"wave_{tag}": wave, f"mel_{tag}": mel, f"xvector_{tag}": xvector})
        arrays["resampled_16k"] = librosa.resample(arrays["wave_16k"], orig_sr=16000, target_sr=24000)
    arrays["mel_filterbank"] = librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128, fmin=0, fmax=12000)
    facts = {
        "model_sha256": sha256,
        "checkpoint": ",".join(f"{k}={v}" for k, v in CHECKPOINT.items()),
        "versions": ", ".join(f"{name} {metadata.version(name)}" for name in VERSIONED),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays, **{k: np.array(v) for k, v in facts.items()})
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({size} bytes), model.safetensors sha256 {sha256}", file=sys.stderr)


if __name__ == "__main__":
    main()
