"""The status page's tests: a whole daemon with its HTTP server, headless Chromium (Debian's, driven by
Playwright; no browser download), and the reference recordings `voice add`'s tests refuse or take."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import soundfile
from daemon_config import start_daemon
from mosquitto_broker import free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As the machine notes say: no sandbox as root, and nothing that phones home on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
RATE = 16000  # not the model's 24 kHz: a recording is resampled on the way in
TIMEOUT_MS = 90_000  # a bound for a busy shared machine, never a verdict


def start_page_daemon(tmp_path: Path, mosquitto, bundle: Path, token: str | None = None,
                      wyoming: bool = False, sections: dict | None = None):  # fmt: skip
    """(a started Service, the base URL of its HTTP server); stop the service yourself."""
    port = free_port()
    servers: dict = {"http": {"enabled": True, "port": port}}
    if token:
        (tmp_path / "http.token").write_text(token)
        servers["http"]["token_file"] = str(tmp_path / "http.token")
    if wyoming:
        servers["wyoming"] = {"enabled": True, "port": free_port(), "zeroconf": False}
    return start_daemon(tmp_path, bundle, mosquitto, "page", servers, sections), f"http://127.0.0.1:{port}"


def launch_chromium(playwright):
    if not Path(CHROMIUM).exists():
        raise AssertionError("chromium is not installed (scripts/setup.sh installs it)")
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def speech_like(seconds: float = 3.0) -> np.ndarray:
    """(n, 2) stereo: a voiced-like tone with harmonics and a little noise (what `voice add` accepts)."""
    t = np.arange(int(seconds * RATE)) / RATE
    voice = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 8)) * (
        0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    )
    noise = np.random.default_rng(0).normal(0, 0.01, t.size)
    mono = (0.3 * voice / np.abs(voice).max() + noise).astype(np.float32)
    return np.stack([mono, 0.8 * mono], axis=1)


def recordings(directory: Path) -> dict[str, Path]:
    """A good recording (ref.wav, ref.flac) and the ones `voice add`'s tests refuse, with what the refusal
    says: silent, truncated, five frames long, longer than 30 s, not audio at all."""
    directory.mkdir(parents=True, exist_ok=True)
    samples = speech_like()
    soundfile.write(directory / "ref.wav", samples, RATE, subtype="PCM_16")
    soundfile.write(directory / "ref.flac", samples, RATE, subtype="PCM_16")
    soundfile.write(directory / "silent.wav", np.zeros(3 * RATE, np.float32), RATE, subtype="PCM_16")
    soundfile.write(directory / "five.wav", samples[:5], RATE, subtype="PCM_16")
    soundfile.write(directory / "long.wav", np.tile(samples, (11, 1)), RATE, subtype="PCM_16")  # 33 s
    whole = (directory / "ref.wav").read_bytes()
    (directory / "cut.wav").write_bytes(whole[: int(len(whole) * 0.6)])
    (directory / "page.wav").write_bytes(b"<html><body>not audio</body></html>" + os.urandom(4096))
    wavs = {stem: directory / f"{stem}.wav" for stem in ("ref", "silent", "five", "long", "cut", "page")}
    return wavs | {"flac": directory / "ref.flac"}


HOSTILE = [  # (file, name, transcript, what the refusal says): voice add's own refusals
    ("silent", "anna", "Hello there.", "silent"),
    ("cut", "anna", "Hello there.", "truncated"),
    ("five", "anna", "Hello there.", "(5 frames)"),
    ("long", "anna", "Hello there.", "use 1 to 30 s"),
    ("page", "anna", "Hello there.", "cannot read audio"),
    ("ref", ".hidden", "Hello there.", "invalid voice name"),
    ("ref", "anna", "", "the transcript is empty"),
    ("ref", "anna", "a" * 1_500, "at most 1000"),
    ("ref", "anna", "tab\x07bell", "control character U+0007"),
]
