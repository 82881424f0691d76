"""The golden fixture files: one `<name>.npz` per case plus the `index.json` that describes them
(format in README.md), written with fixed zip timestamps so the same arrays give the same bytes.

Part of make_golden.py's generator; runs in the reference venv.
"""

from __future__ import annotations

import io
import json
import logging
import platform
import shutil
import zipfile
from pathlib import Path

import cases
import numpy as np
import torch
import transformers

log = logging.getLogger("make_golden")


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like np.savez_compressed, but with fixed zip timestamps: same arrays, same bytes, no git churn."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, value, allow_pickle=False)
            entry = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, buffer.getvalue())


class FixtureWriter:
    """Collects cases into <name>.npz files plus the index.json that describes them."""

    def __init__(self, out: Path):
        self.out = out
        self.records: list[dict] = []
        out.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, kind: str, checkpoint: cases.Checkpoint, arrays: dict, **facts) -> None:
        arrays = {key: np.ascontiguousarray(value) for key, value in arrays.items()}
        write_npz(self.out / f"{name}.npz", arrays)
        self.records.append(
            {
                "name": name,
                "kind": kind,
                "file": f"{name}.npz",
                "checkpoint": checkpoint.name,
                "variant": checkpoint.variant,
                "shape": checkpoint.shape,
                "seed": checkpoint.seed,
                **facts,
                "arrays": {
                    key: {"shape": list(value.shape), "dtype": str(value.dtype)}
                    for key, value in arrays.items()
                },
            }
        )
        log.info("wrote %s (%d bytes)", name, (self.out / f"{name}.npz").stat().st_size)

    def finish(self, checkpoints: dict[str, dict]) -> None:
        index = {
            "format_version": cases.FORMAT_VERSION,
            "generator": "scripts/reference/make_golden.py",
            "versions": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "numpy": np.__version__,
                "qwen_tts": _qwen_tts_version(),
            },
            "greedy": cases.GREEDY,
            "checkpoints": checkpoints,
            "cases": self.records,
        }
        (self.out / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")

    def publish(self, destination: Path) -> None:
        """Replace the fixtures in `destination` by the new set, only once all cases succeeded."""
        destination.mkdir(parents=True, exist_ok=True)
        for stale in [*destination.glob("*.npz"), destination / "index.json"]:
            stale.unlink(missing_ok=True)
        for path in sorted(self.out.iterdir()):
            shutil.copyfile(path, destination / path.name)


def _qwen_tts_version() -> str:
    from importlib.metadata import version

    return version("qwen-tts")
