"""`qwen3tts build`: a Qwen3-TTS release checkpoint -> an OpenVINO bundle, with numpy, opset and nncf only.

Stages: read and check the checkpoint; talker (stateful SDPA, converted to PagedAttention at run
time); batched code predictor; streaming codec graphs (frame part + a sample part per chunk size);
projected text table and codec table; speaker encoder, speech-tokenizer encoder and code predictor
tables (Base: voice cloning); tokenizer files; manifest (written last, so a bundle without one is
unfinished). Weight precision follows a per-component policy recorded in the manifest.
"""

from __future__ import annotations

import logging
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts import __version__
from qwen3tts.errors import BundleError
from qwen3tts.model import bundle as layout
from qwen3tts.model.checkpoint import Checkpoint, load_checkpoint
from qwen3tts.model.codec_storage import reference_decode, remove_reference, write_codec_graphs

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
DEFAULT_CODEC_CHUNKS = (2, 12)  # a small first chunk for time to first audio, then throughput
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

Reporter = Callable[[str], None]


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
        policy["talker"] = _save(model, out / layout.TALKER_XML, policy["talker"], stages.report)
    with stages("code predictor graph"):
        model = build_code_predictor(spec.code_predictor, spec.talker.hidden_size, weights)
        path = out / layout.CODE_PREDICTOR_XML
        policy["code_predictor"] = _save(model, path, policy["code_predictor"], stages.report)
    with stages("codec graphs (stored precision gated against the f32 decode)"):
        policy["codec"] = write_codec_graphs(
            spec.codec, checkpoint.codec_weights, out, chunks, policy["codec"], stages.report
        )
    if spec.speaker_encoder is not None:
        from qwen3tts.model.graphs.speaker_encoder import build_speaker_encoder

        with stages("speaker encoder graph"):
            model = build_speaker_encoder(spec.speaker_encoder, weights)
            _save(model, out / layout.SPEAKER_ENCODER_XML, "f32" if policy["tables"] == "f32" else "f16")
        with stages("speech encoder graph"):
            _save(
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


def _save(model: ov.Model, path: Path, precision: str, report: Reporter | None = None) -> str:
    """Compress (int8 / int4_{sym,asym}_g{N}) and serialise; f16 halves the file, f32 keeps parity exact.

    Returns the precision the graph got: an INT4 group that does not divide a matrix's input channels
    (the tiny checkpoints' 32-96) falls back to a smaller group there, and the label says which.
    """
    if precision.startswith("int"):
        model = gather_tables_to_f16(compress_weights(model, precision))
        precision = _int4_label(model, precision, path.stem, report)
    ov.save_model(model, path, compress_to_fp16=(precision != "f32"))
    return precision


def _int4_label(model: ov.Model, precision: str, name: str, report: Reporter | None) -> str:
    """`precision`, or with the fallback group sizes nncf chose appended, e.g. int4_sym_g128 (g32 x 20)."""
    wanted = re.search(r"_g(\d+)", precision)
    if not wanted:
        return precision
    sizes = int4_group_sizes(model)
    other = {size: count for size, count in sorted(sizes.items()) if size != int(wanted.group(1))}
    if not other:
        return precision
    fallback = ", ".join(f"g{size} x {count}" for size, count in other.items())
    if report:
        report(
            f"{name}: INT4 group {wanted.group(1)} does not divide every matrix's input channels; "
            f"smaller groups there: {fallback} (of {sum(sizes.values())} INT4 matrices)"
        )
    return f"{precision} ({fallback})"


def int4_group_sizes(model: ov.Model) -> dict[int, int]:
    """{group size: number of matrices} over the model's INT4 weights (Constant [N, K/G, G] u4/i4)."""
    sizes: dict[int, int] = {}
    for node in model.get_ordered_ops():
        four_bit = node.get_output_element_type(0) in (ov.Type.u4, ov.Type.i4)
        if node.get_type_name() != "Constant" or not four_bit:
            continue
        shape = node.get_output_shape(0)
        if len(shape) == 3:
            sizes[int(shape[2])] = sizes.get(int(shape[2]), 0) + 1
    return sizes


def compress_weights(model: ov.Model, precision: str) -> ov.Model:
    """NNCF data-free weight compression of every MatMul weight; Gathers (embedding tables) are left alone.

    `int8` is INT8_SYM per output channel, `int8_asym` the same with a zero point. `int4_sym_g128` /
    `int4_asym_g64` ... are INT4 with one scale (and zero point) per group of N input channels, on every
    MatMul (`ratio=1.0`, `all_layers`: the lm_heads too, which NNCF would otherwise keep in INT8); where N
    does not divide a matrix's input channels, nncf takes the largest power of two >= 32 that does
    (GroupSizeFallbackMode.ADJUST; _save names them), and INT8 below that.
    A suffix keeps some matrices in INT8_SYM (mixed precision): `+heads8` the output heads (lm_head,
    codec_head), `+ends8` those and the first and last decoder layers, `+attn8` the heads and every
    attention projection (INT4 on the MLPs only).
    """
    import nncf

    _make_names_unique(model)
    ignored = nncf.IgnoredScope(types=["Gather"], validate=False)
    int8_modes = {"int8": nncf.CompressWeightsMode.INT8_SYM, "int8_asym": nncf.CompressWeightsMode.INT8_ASYM}
    if precision in int8_modes:
        return nncf.compress_weights(model, mode=int8_modes[precision], ignored_scope=ignored)
    base, _, keep = precision.partition("+")
    kind, _, group = base.partition("_g")
    modes = {"int4_sym": nncf.CompressWeightsMode.INT4_SYM, "int4_asym": nncf.CompressWeightsMode.INT4_ASYM}
    if kind not in modes or not group.isdigit() or keep not in ("", "heads8", "ends8", "attn8"):
        raise BundleError(f"unknown weight precision {precision!r}")
    kept = _int8_matmuls(model, keep)
    int4_ignored = nncf.IgnoredScope(names=kept, types=["Gather"], validate=False)
    # a group that does not divide a matrix's input channels: the largest power of two that does (>= 32)
    adjust = nncf.AdvancedCompressionParameters(group_size_fallback_mode=nncf.GroupSizeFallbackMode.ADJUST)
    model = nncf.compress_weights(
        model,
        mode=modes[kind],
        group_size=int(group),
        ratio=1.0,
        all_layers=True,
        ignored_scope=int4_ignored,
        advanced_parameters=adjust,
    )
    if kept:  # the second pass sees only the matrices the first left in float
        model = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_SYM, ignored_scope=ignored)
    return model


def _int8_matmuls(model: ov.Model, keep: str) -> list[str]:
    """Names of the MatMuls whose weight a mixed policy keeps in INT8 (see compress_weights; '' = none)."""
    if not keep:
        return []
    weights = {}  # MatMul name -> its weight Constant's name (the release key, see layers.weight)
    for node in model.get_ordered_ops():
        if node.get_type_name() == "MatMul":
            source = node.input_value(1).get_node()
            if source.get_type_name() == "Constant":
                weights[node.get_friendly_name()] = source.get_friendly_name()
    layer_ids = [int(m.group(1)) for w in weights.values() if (m := re.search(r"\.layers\.(\d+)\.", w))]
    pattern = r"(lm_head|codec_head)\."
    if keep == "ends8" and layer_ids:
        pattern += rf"|\.layers\.(0|{max(layer_ids)})\."
    if keep == "attn8":
        pattern += r"|\.self_attn\."
    return [name for name, weight in weights.items() if re.search(pattern, weight)]


def gather_tables_to_f16(model: ov.Model) -> ov.Model:
    """Store the f32 embedding tables (Constants read only by Gathers) as f16 + Convert, in place.

    After NNCF, save_model's compress_to_fp16 leaves them f32 (the code predictor's 16 tables: 132 MiB).
    The CPU plugin gathers straight from the f16 table and converts the rows it took, so the table
    stays f16 in the mapped file: half the pages a long run touches, one rounding like the host's
    f16 tables (docs/benchmarks.md, issue 16 memory).
    """
    import openvino.opset13 as ops

    for const in model.get_ordered_ops():
        if const.get_type_name() != "Constant" or const.get_output_element_type(0) != ov.Type.f32:
            continue
        readers = list(const.output(0).get_target_inputs())
        if not readers or not all(
            r.get_node().get_type_name() == "Gather" and r.get_index() == 0 for r in readers
        ):
            continue
        table = ops.constant(const.get_data().astype(np.float16))  # (rows, hidden)
        table.set_friendly_name(const.get_friendly_name())
        widened = ops.convert(table, ov.Type.f32)
        for reader in readers:
            reader.replace_source_output(widened.output(0))
    model.validate_nodes_and_infer_types()
    return model


def _make_names_unique(model: ov.Model) -> None:
    """nncf addresses nodes by friendly name; builders may reuse a weight's name for several nodes."""
    seen: dict[str, int] = {}
    for node in model.get_ordered_ops():
        name = node.get_friendly_name()
        count = seen.get(name, 0)
        seen[name] = count + 1
        if count:
            node.set_friendly_name(f"{name}.{count}")


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
