"""Open a bundle for synthesis: verify it, compile its graphs on the device plan, wire an Engine.

This is where settings meet the bundle: the engine's limits and sampling defaults, the KV cache
precision and size, the devices. Everything else reads the resulting Runtime.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
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
from qwen3tts.runtime.devices import DevicePlan, Placement, base_device, preference_lists
from qwen3tts.runtime.native import load_library, replace_int8_matmuls
from qwen3tts.runtime.native_decode import talker as native_talker
from qwen3tts.runtime.native_decode.code_predictor import default_threads, fused_code_predictor
from qwen3tts.runtime.native_decode.talker import NativeTalker
from qwen3tts.runtime.native_decode.tensors import UnreadableTensors
from qwen3tts.runtime.native_plan import choose_fused_code_predictor, choose_native, choose_native_talker
from qwen3tts.runtime.ov_runner import OVRunner, kv_block_size, kv_bytes_per_block
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.runtime.prompt import PromptBuilder
from qwen3tts.runtime.warm_up import settle, warm_up_code_predictor, warm_up_talker
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
    bundle_dir = Path(bundle_dir)
    manifest = layout.read_manifest(bundle_dir)
    spec = manifest.spec
    compiler = compiler or PartCompiler(settings.devices, settings.model.cache_dir)
    prefs = preference_lists(settings.devices)
    plan = DevicePlan()

    native, library = _native_kernels(compiler, prefs, plan)
    released = {}
    talker_model = compiler.read(bundle_dir / layout.TALKER_XML)
    talker = _native_talker(compiler, prefs, plan, library, talker_model, spec, settings)
    released["talker"] = 0  # the native talker reads its weights from the mapped file at every step
    if talker is None:  # the plugin's paged talker
        talker, released["talker"] = _compile_talker(
            compiler, prefs, plan, native, talker_model, bundle_dir, settings
        )
    # The codec before the code predictor: its warm-up (the frame part's first inference repacks its
    # weights while their file is still mapped) is the load's largest transient, so it peaks on top of
    # the talker alone (docs/benchmarks.md, memory).
    codec, released["codec"] = _compile_codec(
        compiler, bundle_dir, manifest, prefs["codec"], plan, settings.model.cache_dir
    )
    cached_before = _cached_files(settings.model.cache_dir)
    predictor_model = compiler.read(bundle_dir / layout.CODE_PREDICTOR_XML)
    predictor = _fused_code_predictor(compiler, prefs, plan, library, predictor_model, spec)
    released["code_predictor"] = 0  # the fused frame reads its weights from the mapped file at every step
    if predictor is None:  # the plugin's graph
        predictor, plan.placements["code_predictor"] = compiler.compile(
            "code_predictor", native("code_predictor", predictor_model), prefs["code_predictor"]
        )
        released["code_predictor"] = compiler.warm_up(
            "code_predictor",
            lambda: _settle_on_cpu(
                plan,
                "code_predictor",
                _weight_files(
                    bundle_dir / layout.CODE_PREDICTOR_XML, settings.model.cache_dir, cached_before
                ),
                lambda: warm_up_code_predictor(predictor, spec.code_predictor, spec.talker.hidden_size),
            ),
        )
    if isinstance(talker, NativeTalker):
        num_blocks, precision = talker.num_blocks, "f16, native"
    else:
        num_blocks, precision = _plugin_kv_blocks(talker, settings), settings.engine.kv_cache_precision
    runner = OVRunner(spec, talker, predictor, codec, num_blocks)
    log.info(
        "KV cache: %d blocks of %d positions (%s, %.0f MiB)",
        num_blocks,
        runner.block_size,
        precision,
        runner.kv_cache_bytes / 2**20,
    )
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
        lambda: _settle_on_cpu(
            plan,
            "talker",
            [(bundle_dir / layout.TALKER_XML).with_suffix(".bin")],  # never cached: see to_paged
            lambda: warm_up_talker(talker, model.input(INPUTS_EMBEDS).get_partial_shape()[-1].get_length()),
        ),
    )
    return talker, released


def _native_talker(compiler: PartCompiler, prefs, plan: DevicePlan, library, model, spec, settings):
    """The native talker if devices.native_talker asks for it and it builds, else None (the plugin's
    paged talker); one log line either way, naming why. Its KV pool follows the plugin's rule
    (kv_pool_blocks) with the native cache's block size and bytes per block."""
    devices = compiler.settings
    choice = choose_native_talker(devices, library and library.isa, prefs, compiler.available)
    if not choice.wanted:
        log.info("talker: the plugin's paged graph, not the native step (%s)", choice.why)
        return None
    per_block = native_talker.kv_bytes_per_block(spec.talker)
    blocks = settings.engine.num_kv_blocks or kv_pool_blocks(per_block, native_talker.BLOCK_SIZE, settings)
    threads = default_threads(devices.num_threads)
    try:
        talker = native_talker.build_native_talker(library, model, spec.talker, blocks, threads)
    except (UnreadableTensors, ValueError, OSError) as exc:
        log.warning("talker: the plugin's paged graph, the native step cannot run: %s", exc)
        return None
    plan.placements["talker"] = Placement("talker", "CPU")
    plan.fused["talker"] = talker.isa
    log.info("talker: native step (%s kernels, %d threads; %s)", talker.isa, threads, choice.why)
    return talker


def _cached_files(cache_dir: Path | None) -> set[Path]:
    return mapped_files(Path(cache_dir)) if cache_dir else set()


def _weight_files(xml: Path, cache_dir: Path | None, cached_before: set[Path]) -> list[Path]:
    """Where a graph's weights are mapped from: its .bin, or the compile-cache blobs mapped since its
    read began (the codec's, mapped and released before, would only be counted twice)."""
    return [xml.with_suffix(".bin"), *sorted(_cached_files(cache_dir) - cached_before)]


def _settle_on_cpu(plan: DevicePlan, component: str, weight_files: list[Path], warm_up) -> int:
    """Warm a CPU-placed graph up and release its weight file's pages (runtime/warm_up.py).

    Other plugins copy the weights to their device at compile; their files are not ours to judge. The
    native op reads its INT8 weights from the mapped file at every step: those pages fault back in at
    the first steps (from the page cache), the rest (tables read at compile, a copy a compile-cache
    blob duplicates) stay out.
    """
    if base_device(plan.device(component)) != "CPU":
        return 0
    return settle(component, weight_files, warm_up)


def _native_kernels(compiler: PartCompiler, prefs, plan: DevicePlan):
    """A function (component, model) -> model with the native op in it where native_plan chose it, and
    the loaded library (None: not loaded); records the choice in `plan.native` and logs it once."""
    devices, library = compiler.settings, None  # (a bench's compiler may override the settings' devices)
    wanted = devices.native_kernels != "never" or devices.native_talker == "always"
    if wanted and devices.inference_precision != "f32":
        library = load_library(devices.native_library, compiler.core)
    choice = choose_native(devices, library and library.isa, prefs, compiler.available)
    if choice.components:
        names = ", ".join(sorted(choice.components))
        log.info("native kernels (%s) for %s: %s", library.isa, names, choice.why)
    else:
        log.info("native kernels: not used (%s)", choice.why)

    def rewrite(component: str, model):
        if component in choice.components:
            replaced = replace_int8_matmuls(model, library)
            plan.native[component] = library.isa
            log.info("%s: %d INT8 MatMuls on the native %s kernels", component, replaced, library.isa)
        return model

    return rewrite, library


def _fused_code_predictor(compiler: PartCompiler, prefs, plan: DevicePlan, library, model, spec):
    """The fused native code predictor if native_plan chooses it and it builds, else None (the plugin's
    graph); one log line either way, naming why."""
    devices = compiler.settings
    choice = choose_fused_code_predictor(devices, library and library.isa, prefs, compiler.available)
    if not choice.wanted:
        log.info("code_predictor: the plugin's graph, not the fused native frame (%s)", choice.why)
        return None
    threads = default_threads(devices.num_threads)
    try:
        predictor = fused_code_predictor(library, model, spec.code_predictor, threads)
    except (UnreadableTensors, ValueError, OSError) as exc:
        log.warning("code_predictor: the plugin's graph, the fused native frame cannot run: %s", exc)
        return None
    plan.placements["code_predictor"] = Placement("code_predictor", "CPU")
    plan.fused["code_predictor"] = predictor.isa
    log.info(
        "code_predictor: fused native frame (%s kernels, %d threads; %s)", predictor.isa, threads, choice.why
    )
    return predictor


# Prompt positions beyond one per text character: chat template, speaker / language / codec control
# tokens; generous, since too few blocks only means preemption.
PROMPT_OVERHEAD_POSITIONS = 64


def kv_pool_blocks(bytes_per_block: int, block_size: int, settings: Settings) -> int:
    """The KV pool: the memory budget (engine.kv_cache_mib), but no more than the batch limit can ever fill.

    A sequence holds at most its prompt (about one position per text character, bounded by
    max_text_chars, plus control tokens) and max_frames generated positions.
    """
    engine = settings.engine
    budget = max(1, (engine.kv_cache_mib << 20) // bytes_per_block)
    per_seq = engine.max_text_chars + PROMPT_OVERHEAD_POSITIONS + engine.max_frames
    return min(budget, engine.max_num_seqs * -(-per_seq // block_size))


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
