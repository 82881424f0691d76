"""The golden fixtures stay tied to the checkpoints they were computed from.

tests/fixtures/golden/ holds outputs of the official Qwen3-TTS implementation run on checkpoints that
`qwen3tts.model.tiny.write_checkpoint` wrote (scripts/reference/make_golden.py). index.json records
the sha256 of every checkpoint file; when write_checkpoint changes, the fixtures describe a model
that no longer exists, and these tests say how to regenerate them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from qwen3tts.model.tiny import write_checkpoint

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
SUPPORTED_FORMAT_VERSION = 1
REGENERATE = (
    "If the change is intended, regenerate the fixtures with `scripts/reference/make_golden.sh` "
    "(creates the reference venv on first use; see scripts/reference/README.md) and commit "
    "tests/fixtures/golden/."
)


def _index() -> dict:
    return json.loads((GOLDEN / "index.json").read_text(encoding="utf-8"))


INDEX = _index()


def file_hashes(directory: Path) -> dict[str, str]:
    """sha256 of every file under `directory`, keyed by POSIX path relative to it (as make_golden.py)."""
    return {
        path.relative_to(directory).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def describe_drift(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Human-readable differences between the recorded and the current checkpoint files."""
    problems = [f"missing now: {name}" for name in sorted(set(recorded) - set(current))]
    problems += [f"new file: {name}" for name in sorted(set(current) - set(recorded))]
    problems += [
        f"changed: {name}" for name in sorted(set(recorded) & set(current)) if recorded[name] != current[name]
    ]
    return problems


def test_golden_index_has_the_supported_format_version():
    assert INDEX["format_version"] == SUPPORTED_FORMAT_VERSION, (
        f"tests/fixtures/golden/index.json has format_version {INDEX['format_version']}, the tests read "
        f"version {SUPPORTED_FORMAT_VERSION}. {REGENERATE}"
    )


@pytest.mark.parametrize("name", sorted(INDEX["checkpoints"]))
def test_write_checkpoint_still_writes_the_bytes_the_golden_fixtures_came_from(name, tmp_path):
    recorded = INDEX["checkpoints"][name]
    written = write_checkpoint(tmp_path / name, recorded["variant"], recorded["shape"], recorded["seed"])
    drift = describe_drift(recorded["files"], file_hashes(Path(written)))
    assert not drift, (
        f"`qwen3tts tiny OUT --variant {recorded['variant']} --shape {recorded['shape']} "
        f"--seed {recorded['seed']}` no longer writes the checkpoint the golden fixtures were computed "
        f"from ({name}): {'; '.join(drift)}. {REGENERATE}"
    )


def test_drift_detection_reports_a_single_changed_byte(tmp_path):
    written = Path(write_checkpoint(tmp_path / "ckpt", "custom_voice", "tiny", 0))
    before = file_hashes(written)
    config = written / "config.json"
    config.write_bytes(config.read_bytes().replace(b"\n", b"\n ", 1))
    assert describe_drift(before, file_hashes(written)) == ["changed: config.json"]
    (written / "config.json").unlink()
    assert describe_drift(before, file_hashes(written)) == ["missing now: config.json"]


def test_every_case_references_a_recorded_checkpoint_with_its_arguments():
    checkpoints = INDEX["checkpoints"]
    for case in INDEX["cases"]:
        recorded = checkpoints[case["checkpoint"]]
        assert (case["variant"], case["shape"], case["seed"]) == (
            recorded["variant"],
            recorded["shape"],
            recorded["seed"],
        ), case["name"]


@pytest.mark.parametrize("case", INDEX["cases"], ids=lambda case: case["name"])
def test_fixture_file_holds_exactly_the_arrays_the_index_lists(case):
    with np.load(GOLDEN / case["file"]) as npz:
        stored = {key: (list(npz[key].shape), str(npz[key].dtype)) for key in npz.files}
    listed = {key: (spec["shape"], spec["dtype"]) for key, spec in case["arrays"].items()}
    assert stored == listed, f"{case['file']} does not match index.json. {REGENERATE}"


def test_fixtures_cover_every_variant_shape_and_prompt_layout():
    talker = [case for case in INDEX["cases"] if case["kind"] == "talker"]
    covered = {(case["variant"], case["shape"], case["non_streaming"]) for case in talker}
    for variant, shape in {(case["variant"], case["shape"]) for case in talker}:
        assert {(variant, shape, True), (variant, shape, False)} <= covered, (variant, shape)
    assert {case["variant"] for case in talker} == {"custom_voice", "voice_design", "base"}
    assert {case["shape"] for case in talker} == {"tiny", "tiny-1.7b"}
    kinds = {case["kind"] for case in INDEX["cases"]}
    assert kinds == {"tokenizer", "codec", "speaker_encoder", "speech_encoder", "talker"}
    icl = {(case["shape"], case["non_streaming"]) for case in talker if case.get("ref_text")}
    assert icl == {(s, m) for s in ("tiny", "tiny-1.7b") for m in (True, False)}, "ICL cases missing"
    assert all(case["num_frames"] >= 30 for case in talker if not case["stopped_by_eos"])
    assert any(case["stopped_by_eos"] for case in talker), "no case covers the end of generation by EOS"
    assert max(case["num_frames"] for case in INDEX["cases"] if case["kind"] == "codec") <= 300
