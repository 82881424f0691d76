"""Open a bundle for synthesis: verify it, compile its graphs on the device plan, wire an Engine.

This is where settings meet the bundle: the engine's limits and sampling defaults, the KV cache
precision and size, the devices. Everything else reads the resulting Runtime.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from qwen3tts.engine.config import EngineConfig, SamplingParams
from qwen3tts.engine.engine import Engine
from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs.talker import INPUTS_EMBEDS, to_paged
from qwen3tts.model.spec import ModelSpec
from qwen3tts.model.tokenizer import TextTokenizer
from qwen3tts.runtime.cloning import VoiceEncoder, read_audio
from qwen3tts.runtime.codec import CodecChunkModels
from qwen3tts.runtime.codec_variants import pick_for_load
from qwen3tts.runtime.devices import DevicePlan, base_device, preference_lists, threads_for
from qwen3tts.runtime.kv_pool import kv_pool_blocks
from qwen3tts.runtime.native_decode.talker import NativeTalker
from qwen3tts.runtime.native_paths import fused_code_predictor_or_none, native_kernels, native_talker_or_none
from qwen3tts.runtime.ov_runner import CodePredictorRoute, OVRunner, kv_block_size, kv_bytes_per_block
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.runtime.prompt import PromptBuilder
from qwen3tts.runtime.tie_fallback import add_fallback_switch
from qwen3tts.runtime.warm_up import settle, settle_on_cpu, warm_up_code_predictor, warm_up_talker
from qwen3tts.runtime.weight_pages import mapped_files
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    """A loaded bundle: its manifest, the device plan, and an engine ready to start."""

    bundle_dir: Path
    manifest: layout.Manifest
    plan: DevicePlan
    runner: OVRunner
    prompt_builder: PromptBuilder
    engine: Engine
    voice_encoder: VoiceEncoder | None = None  # Base: reference audio (+ transcript) -> VoiceInputs
    released_weight_bytes: dict[str, int] = field(default_factory=dict)  # weight-file pages given back

    @property
    def spec(self) -> ModelSpec:
        return self.manifest.spec


def engine_config(settings: Settings, codec_chunks: tuple[int, ...]) -> EngineConfig:
    """Engine limits from settings; PCM chunk sizes from the bundle's compiled codec chunks."""
    engine = settings.engine
    sampling = SamplingParams(
        temperature=engine.temperature,
        top_k=engine.top_k,
        top_p=engine.top_p,
        repetition_penalty=engine.repetition_penalty,
        subtalker_temperature=engine.subtalker_temperature,
        subtalker_top_k=engine.subtalker_top_k,
        subtalker_top_p=engine.subtalker_top_p,
    )
    return EngineConfig(
        max_num_seqs=engine.max_num_seqs,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        max_frames=engine.max_frames,
        first_chunk_frames=min(codec_chunks),
        chunk_frames=max(codec_chunks),
        sampling=sampling,
        enable_prefix_caching=engine.prefix_caching,
    )


def load_runtime(
    bundle_dir: Path,
    settings: Settings,
    compiler: PartCompiler | None = None,
    heartbeat: Callable[[], None] | None = None,
) -> Runtime:
    """Verify, compile and wire; `heartbeat` is called by the engine loop at least twice a second."""
    bundle_dir, manifest = Path(bundle_dir), layout.read_manifest(bundle_dir)
    devices = threads_for(layout.decode_weight_bytes(bundle_dir), settings.devices)
    settings, spec = replace(settings, devices=devices), manifest.spec
    compiler = compiler or PartCompiler(settings.devices, settings.model.cache_dir)
    prefs, plan = preference_lists(settings.devices), DevicePlan()

    native, library = native_kernels(compiler, prefs, plan)
    released = {}
    # The codec first: its warm-up (the frame part's first inference repacks its weights while their
    # file is still mapped) is the load's largest transient, so it peaks before any other part's weights
    # are resident (docs/benchmarks.md, memory).
    codec, released["codec"] = _compile_codec(
        compiler, bundle_dir, manifest, prefs["codec"], plan, settings.model.cache_dir
    )
    talker_model = compiler.read(bundle_dir / layout.TALKER_XML)
    talker = native_talker_or_none(
        compiler, prefs, plan, library, talker_model, spec, settings, manifest.precision
    )
    released["talker"] = 0  # the native talker reads its weights from the mapped file at every step
    if talker is None:  # the plugin's paged talker
        talker, released["talker"] = _compile_talker(
            compiler, prefs, plan, native, talker_model, bundle_dir, settings
        )
    predictor, released["code_predictor"] = _code_predictor(
        compiler, prefs, plan, native, library, manifest, bundle_dir, settings
    )
    if isinstance(talker, NativeTalker):
        num_blocks, precision = talker.num_blocks, f"{talker.cache_precision}, native"
    else:
        num_blocks, precision = _plugin_kv_blocks(talker, settings), settings.engine.kv_cache_precision
    runner = OVRunner(spec, talker, predictor, codec, num_blocks)
    log.info("KV cache: %d blocks of %d positions (%s, %.0f MiB)", num_blocks, runner.block_size, precision,
             runner.kv_cache_bytes / 2**20)  # fmt: skip
    if runner.talker_path == "plugin":  # every kind of step's buffers now, not hours later
        released["talker"] += _reserve_talker(compiler, plan, runner, bundle_dir, settings)
    tokenizer = TextTokenizer.from_dir(bundle_dir / layout.TOKENIZER_DIR)
    voice_encoder = _voice_encoder(compiler, bundle_dir, spec, plan, tokenizer)
    predictor_tables = bundle_dir / layout.PREDICTOR_TABLES
    prompt_builder = PromptBuilder(
        spec,
        tokenizer,
        np.load(bundle_dir / layout.TEXT_TABLE, mmap_mode="r"),
        np.load(bundle_dir / layout.CODEC_EMBEDDING),
        _xvector_source(voice_encoder, settings),
        np.load(predictor_tables, mmap_mode="r") if predictor_tables.is_file() else None,
        text_track=settings.engine.text_track,
    )
    engine = Engine(
        runner, prompt_builder, engine_config(settings, manifest.codec_chunks), heartbeat=heartbeat
    )
    return Runtime(bundle_dir, manifest, plan, runner, prompt_builder, engine, voice_encoder, released)


def _compile_talker(compiler: PartCompiler, prefs, plan: DevicePlan, native, model, bundle_dir, settings):
    """The plugin's paged talker, compiled and warmed up; (compiled model, weight bytes released)."""
    # The PagedAttention conversion runs at every start: a converted IR does not load back.
    talker, plan.placements["talker"] = compiler.compile(
        "talker",
        native("talker", to_paged(model)),
        prefs["talker"],
        settings.engine.kv_cache_precision,
        cacheable=False,
    )
    released = compiler.warm_up(  # (through the compiler: a bench accounts each graph's growth)
        "talker",
        lambda: settle_on_cpu(
            plan,
            "talker",
            [(bundle_dir / layout.TALKER_XML).with_suffix(".bin")],  # never cached: see to_paged
            lambda: warm_up_talker(talker, model.input(INPUTS_EMBEDS).get_partial_shape()[-1].get_length()),
        ),
    )
    return talker, released


def _reserve_talker(compiler: PartCompiler, plan: DevicePlan, runner: OVRunner, bundle_dir, settings) -> int:
    """runtime/talker_reserve.py on the runner's own request; its new kernels read the weight file again."""
    limits = settings.engine
    steps = (limits.max_num_seqs, limits.max_num_batched_tokens, limits.max_frames)
    weights = [(bundle_dir / layout.TALKER_XML).with_suffix(".bin")]
    return compiler.warm_up(
        "talker",
        lambda: settle_on_cpu(plan, "talker", weights, lambda: runner.reserve_talker_memory(*steps)),
    )


def _code_predictor(compiler: PartCompiler, prefs, plan, native, library, manifest, bundle_dir, settings):
    """The fused native frame, the plugin's graph compiled and warmed up, or both (the frame for the batches
    it measured faster on, runtime/native_plan.py); (it, weight bytes released)."""
    spec = manifest.spec
    cached_before = _cached_files(settings.model.cache_dir)
    xml = bundle_dir / layout.CODE_PREDICTOR_XML
    model = compiler.read(xml)
    fused = fused_code_predictor_or_none(
        compiler, prefs, plan, library, model, manifest, xml.with_suffix(".bin"), settings.engine.max_num_seqs
    )
    up_to = plan.fused_up_to.get("code_predictor")
    if fused is not None and up_to is None:
        # The fused frame reads its weights from the mapped file at every step: nothing to give back, and
        # no compiled copy of them is ever made (the plugin's graph is compiled only without the frame).
        return fused, 0
    add_fallback_switch(model)  # after the frame read the model: the bundle's graph, one input more
    graph, plan.placements["code_predictor"] = compiler.compile(
        "code_predictor", native("code_predictor", model), prefs["code_predictor"]
    )
    # Where the graph's weights are mapped from: the bundle's .bin, or the compile-cache blobs mapped since
    # its read began (the codec's, released before, would be counted twice). Beside the frame the .bin's
    # pages stay: the frame reads them at every small batch.
    blobs = sorted(_cached_files(settings.model.cache_dir) - cached_before)
    weight_files = blobs if fused else [xml.with_suffix(".bin"), *blobs]
    released = compiler.warm_up(
        "code_predictor",
        lambda: settle_on_cpu(
            plan,
            "code_predictor",
            weight_files,
            lambda: warm_up_code_predictor(
                graph, spec.code_predictor, spec.talker.hidden_size, settings.engine
            ),
        ),
    )
    return (graph if fused is None else CodePredictorRoute(fused, graph, up_to)), released


def _cached_files(cache_dir: Path | None) -> set[Path]:
    return mapped_files(Path(cache_dir)) if cache_dir else set()


def _plugin_kv_blocks(compiled_talker, settings: Settings) -> int:
    """engine.num_kv_blocks, or kv_pool_blocks with the compiled talker's cache shapes and precision."""
    return settings.engine.num_kv_blocks or kv_pool_blocks(
        kv_bytes_per_block(compiled_talker), kv_block_size(compiled_talker), settings
    )


def _compile_codec(
    compiler, bundle_dir, manifest, preferences, plan, cache_dir
) -> tuple[CodecChunkModels, int]:
    """The codec graphs of the bundle's layout, all on one device (the chunk sizes share one stream
    state), warmed up so the first request does not pay for the frame part's first inference; on the
    CPU their weight files' pages are given back after that warm-up. Returns (codec, bytes released)."""
    # None: the exact graphs; a variant is alternative sample parts sharing the frame part
    variant = pick_for_load(compiler, layout.loadable_codec_variants(manifest), preferences)
    plan.codec_variant = variant or "f32"
    frames_xml, chunk_xmls = layout.codec_graph_files(manifest, variant)
    devices = list(preferences)
    cached_before = mapped_files(cache_dir) if cache_dir else set()

    def compile_part(xml: str):
        nonlocal devices
        compiled, plan.placements["codec"] = compiler.compile(
            "codec", compiler.read(bundle_dir / xml), devices
        )
        devices = [plan.placements["codec"].device]
        return compiled

    frames = compile_part(frames_xml) if frames_xml else None
    compiled = {size: compile_part(xml) for size, xml in chunk_xmls.items()}
    codec = CodecChunkModels(compiled, manifest.spec.codec, frames)
    if base_device(plan.device("codec")) != "CPU":  # other plugins copied the weights at compile
        compiler.warm_up("codec", codec.warm_up)
        log.info("codec: warmed up on %s", plan.device("codec"))
        return codec, 0
    # the codec's own compile-cache blobs: those mapped since its compile began
    blobs = (mapped_files(cache_dir) - cached_before) if cache_dir else set()
    xmls = [*([frames_xml] if frames_xml else []), *chunk_xmls.values()]
    files = [(bundle_dir / xml).with_suffix(".bin") for xml in xmls] + sorted(blobs)
    # one warm-up, through the compiler so that bench's RSS ledger counts its growth for the codec
    released = compiler.warm_up("codec", lambda: settle("codec", files, codec.warm_up))
    return codec, released


def _voice_encoder(compiler, bundle_dir, spec, plan, tokenizer) -> VoiceEncoder | None:
    """Base bundles: the speaker encoder, and the speech encoder if the bundle has one (ICL)."""
    if spec.speaker_encoder is None:
        return None
    from qwen3tts.runtime.speaker import SpeakerEncoder
    from qwen3tts.runtime.speech_encoder import SpeechEncoder

    compiled, plan.placements["speaker_encoder"] = compiler.compile(
        "speaker_encoder", compiler.read(bundle_dir / layout.SPEAKER_ENCODER_XML), ("CPU",)
    )
    speech = None
    if (bundle_dir / layout.SPEECH_ENCODER_XML).is_file():
        encoder, plan.placements["speech_encoder"] = compiler.compile(
            "speech_encoder", compiler.read(bundle_dir / layout.SPEECH_ENCODER_XML), ("CPU",)
        )
        speech = SpeechEncoder(encoder)
    else:
        log.warning("bundle %s has no speech encoder: ICL voice cloning needs a rebuild", bundle_dir)
    return VoiceEncoder(SpeakerEncoder(compiled), speech, tokenizer)


def _xvector_source(voice_encoder: VoiceEncoder | None, settings):
    """Base bundles: reference audio path -> x-vector, computed once per path (None -> voice.ref_audio)."""
    if voice_encoder is None:
        return None
    encoder = voice_encoder.speaker
    cache: dict[str, np.ndarray] = {}
    lock = threading.Lock()  # submit() may come from several threads; the infer request is not shared

    def xvector(ref_audio: str | None) -> np.ndarray | None:
        path = ref_audio or (str(settings.voice.ref_audio) if settings.voice.ref_audio else None)
        if path is None:
            return None
        with lock:
            if path not in cache:
                cache[path] = encoder.xvector(*read_audio(path))  # any format libsndfile reads
            return cache[path]

    return xvector
