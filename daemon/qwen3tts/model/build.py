"""`qwen3tts build`: a Qwen3-TTS release checkpoint -> an OpenVINO bundle, with numpy, opset and nncf only.

Stages: read and check the checkpoint; talker (stateful SDPA, converted to PagedAttention at run
time); batched code predictor; streaming codec graphs (frame part + a sample part per chunk size);
projected text table and codec table; speaker encoder, speech-tokenizer encoder and code predictor
tables (Base: voice cloning); tokenizer files; manifest (written last, so a bundle without one is
unfinished). Weight precision follows a per-component policy recorded in the manifest.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts import __version__
from qwen3tts.errors import BundleError
from qwen3tts.model import bundle as layout
from qwen3tts.model.checkpoint import Checkpoint, load_checkpoint
from qwen3tts.model.codec_storage import reference_decode, remove_reference, write_codec_graphs
from qwen3tts.model.compression import Reporter, save_graph
from qwen3tts.settings import EngineSettings

log = logging.getLogger(__name__)

# Weight precision per component for each `--weights` choice. INT8_SYM where it does not hurt
# (docs/architecture.md, decision 6): the talker's matmuls; embeddings (Gather) stay f16. The int4 policies
# halve the code predictor's weight reads (it reads the most bytes per frame) and are build options
# until their drift is accepted (docs/fidelity.md, docs/benchmarks.md).
PRECISION_POLICIES: dict[str, dict[str, str]] = {
    "int8": {"talker": "int8", "code_predictor": "int8", "codec": "f16", "tables": "f16"},
    "int4-cp": {"talker": "int8", "code_predictor": "int4_sym_g128", "codec": "f16", "tables": "f16"},
    "int4": {"talker": "int4_sym_g128", "code_predictor": "int4_sym_g128", "codec": "f16", "tables": "f16"},
    "f16": {"talker": "f16", "code_predictor": "f16", "codec": "f16", "tables": "f16"},
    "f32": {"talker": "f32", "code_predictor": "f32", "codec": "f32", "tables": "f32"},
}
# A small first chunk for time to first audio, then throughput: the settings' engine.first_chunk_frames
# and engine.chunk_frames, the one source of these defaults.
DEFAULT_CODEC_CHUNKS = (EngineSettings().first_chunk_frames, EngineSettings().chunk_frames)
# Lossy codec variants `qwen3tts build` tries beside the exact graphs; each is kept only if it passes
# the SNR gate on this checkpoint (model/codec_gate.py). Library callers (tests) get exact graphs only.
CODEC_VARIANTS = ("bf16-tail",)
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")
SOURCE_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    *TOKENIZER_FILES,
    "speech_tokenizer/config.json",
    "speech_tokenizer/model.safetensors",
)


def build_bundle(
    checkpoint_dir: Path,
    out_dir: Path,
    weights: str = "int8",
    codec_chunks: tuple[int, ...] = DEFAULT_CODEC_CHUNKS,
    report: Reporter | None = None,
    codec_variants: tuple[str, ...] = (),
) -> layout.Manifest:
    """Build the bundle for `checkpoint_dir` into `out_dir` (replaced if it exists); returns its manifest."""
    if weights not in PRECISION_POLICIES:
        raise BundleError(f"weights: expected one of {', '.join(PRECISION_POLICIES)}, got {weights!r}")
    unknown = sorted(set(codec_variants) - set(CODEC_VARIANTS))
    if unknown:
        raise BundleError(f"codec variants: expected some of {', '.join(CODEC_VARIANTS)}, got {unknown[0]!r}")
    policy = dict(PRECISION_POLICIES[weights])  # _build_graphs records what each graph really got
    stages = _Stages(report or _print_stage)
    with stages("reading checkpoint"):
        checkpoint = load_checkpoint(checkpoint_dir)
    out_dir = Path(out_dir)
    work_dir = out_dir.with_name(out_dir.name + ".building")
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    _build_graphs(checkpoint, work_dir, policy, codec_chunks, stages)
    variants = []
    if "bf16-tail" in codec_variants:
        from qwen3tts.model.codec_gate import build_bf16_tail

        with stages("codec bf16-tail variant (SNR gate against the f32 decode)"):
            spec, chunk = checkpoint.spec.codec, max(codec_chunks)
            reference = lambda codes: reference_decode(ov.Core(), work_dir, spec, chunk, codes)  # noqa: E731
            variant = build_bf16_tail(work_dir, spec, codec_chunks, stages.report, reference)
            variants += [variant] if variant else []
    remove_reference(work_dir)
    with stages("tables and tokenizer"):
        _write_tables(checkpoint, work_dir, policy["tables"])
        _copy_tokenizer(checkpoint.path, work_dir / layout.TOKENIZER_DIR)
    with stages("hashing and manifest"):
        manifest = layout.write_manifest(
            work_dir,
            {
                "spec": checkpoint.spec,
                "precision": dict(policy),
                "codec_chunks": tuple(codec_chunks),
                "versions": _versions(),
                "source_files": _source_hashes(checkpoint),
                "random_weights": layout.has_random_weights(checkpoint.path),
                "codec_layout": layout.CODEC_SPLIT,
                "codec_variants": tuple(variants),
            },
        )
    shutil.rmtree(out_dir, ignore_errors=True)
    work_dir.rename(out_dir)  # atomic switch: a crash mid-build never leaves a half bundle in place
    return manifest


def _build_graphs(checkpoint: Checkpoint, out: Path, policy: dict[str, str], chunks, stages) -> None:
    from qwen3tts.model.graphs.code_predictor import build_code_predictor
    from qwen3tts.model.graphs.talker import build_talker

    spec, weights = checkpoint.spec, checkpoint.weights
    with stages("talker graph"):
        model = build_talker(spec.talker, weights)
        policy["talker"] = save_graph(model, out / layout.TALKER_XML, policy["talker"], stages.report)
    with stages("code predictor graph"):
        model = build_code_predictor(spec.code_predictor, spec.talker.hidden_size, weights)
        path = out / layout.CODE_PREDICTOR_XML
        policy["code_predictor"] = save_graph(model, path, policy["code_predictor"], stages.report)
    with stages("codec graphs (stored precision gated against the f32 decode)"):
        policy["codec"] = write_codec_graphs(
            spec.codec, checkpoint.codec_weights, out, chunks, policy["codec"], stages.report
        )
    if spec.speaker_encoder is not None:
        from qwen3tts.model.graphs.speaker_encoder import build_speaker_encoder

        with stages("speaker encoder graph"):
            model = build_speaker_encoder(spec.speaker_encoder, weights)
            save_graph(model, out / layout.SPEAKER_ENCODER_XML, "f32" if policy["tables"] == "f32" else "f16")
        with stages("speech encoder graph"):
            save_graph(
                _speech_encoder(checkpoint),
                out / layout.SPEECH_ENCODER_XML,
                "f32" if policy["tables"] == "f32" else "f16",
            )


def _speech_encoder(checkpoint: Checkpoint) -> ov.Model:
    """The speech tokenizer's encoder (ICL voice cloning) from `speech_tokenizer/`."""
    from qwen3tts.model.checkpoint import read_json
    from qwen3tts.model.graphs.speech_encoder import build_speech_encoder
    from qwen3tts.model.spec_parse import CODEC_CONFIG, parse_speech_encoder_spec

    spec = parse_speech_encoder_spec(read_json(checkpoint.path / CODEC_CONFIG))
    missing = [k for k in ("encoder.encoder.layers.0.conv.weight", "encoder.downsample.conv.weight")
               if k not in checkpoint.codec_weights]  # fmt: skip
    if missing:
        raise BundleError(
            f"{checkpoint.path / 'speech_tokenizer'}: no encoder weights ({missing[0]} missing)"
        )
    return build_speech_encoder(spec, checkpoint.codec_weights)


def _write_tables(checkpoint: Checkpoint, out: Path, precision: str) -> None:
    """Projected text table and the talker's codec table, looked up on the host when building prompts.

    The projected table (text_vocab x hidden) is smaller than the raw 2048-wide table plus its MLP
    and turns a per-token MLP into a row read.
    """
    from qwen3tts.model.graphs.embeddings import CODEC_TABLE, project_text_table

    dtype = np.float32 if precision == "f32" else np.float16
    np.save(out / layout.TEXT_TABLE, project_text_table(checkpoint.weights, dtype=dtype))
    np.save(out / layout.CODEC_EMBEDDING, np.asarray(checkpoint.weights[CODEC_TABLE], dtype=dtype))
    if checkpoint.spec.variant == "base":  # ICL prompts embed whole reference frames on the host
        from qwen3tts.model.graphs.embeddings import predictor_tables

        tables = predictor_tables(checkpoint.weights, checkpoint.spec.talker.num_code_groups)
        np.save(out / layout.PREDICTOR_TABLES, tables.astype(dtype))


def _copy_tokenizer(checkpoint_dir: Path, out: Path) -> None:
    out.mkdir()
    for name in TOKENIZER_FILES:
        shutil.copyfile(checkpoint_dir / name, out / name)


def _source_hashes(checkpoint: Checkpoint) -> dict[str, str]:
    return {name: checkpoint.file_sha256(name) for name in SOURCE_FILES}


def _versions() -> dict[str, str]:
    import nncf

    return {"qwen3tts": __version__, "openvino": ov.get_version(), "nncf": nncf.__version__}


class _Stages:
    """Numbered progress lines with timings, so a minutes-long 1.7B build shows where it is."""

    def __init__(self, report: Reporter):
        self.report = report
        self.count = 0

    def __call__(self, name: str):
        self.count += 1
        return _Stage(self.report, f"[{self.count}] {name}")


class _Stage:
    def __init__(self, report: Reporter, label: str):
        self.report, self.label = report, label

    def __enter__(self):
        self.started = time.perf_counter()
        self.report(f"{self.label} ...")
        return self

    def __exit__(self, kind, exc, tb):
        status = "failed" if kind else "done"
        self.report(f"{self.label} {status} in {time.perf_counter() - self.started:.1f} s")
        return False


def _print_stage(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
