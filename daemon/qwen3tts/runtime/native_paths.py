"""Which decode paths the loader takes on the CPU, and building the native ones (runtime/native_plan.py
decides, this module acts and logs one line per choice): the native op in the INT8 graphs, the code
predictor's fused frame, the native talker step.
"""

from __future__ import annotations

import logging

from qwen3tts.runtime.devices import DevicePlan, Placement
from qwen3tts.runtime.huge_pages import map_in_huge_pages
from qwen3tts.runtime.kv_pool import kv_pool_blocks
from qwen3tts.runtime.native import load_library, replace_int8_matmuls
from qwen3tts.runtime.native_decode import talker as native_talker
from qwen3tts.runtime.native_decode.code_predictor import default_threads, fused_code_predictor
from qwen3tts.runtime.native_decode.tensors import UnreadableTensors
from qwen3tts.runtime.native_plan import choose_fused_code_predictor, choose_native, choose_native_talker
from qwen3tts.runtime.parts import PartCompiler

log = logging.getLogger("qwen3tts.runtime.loader")  # the load's log lines, wherever they are written


def native_kernels(compiler: PartCompiler, prefs, plan: DevicePlan):
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
            if replaced:  # a graph without INT8_SYM weights (f16, INT4) stays the plugin's: say so
                plan.native[component] = library.isa
                log.info("%s: %d INT8 MatMuls on the native %s kernels", component, replaced, library.isa)
            else:
                log.info("%s: no INT8 MatMul for the native kernels, the plugin's graph", component)
        return model

    return rewrite, library


def fused_code_predictor_or_none(
    compiler: PartCompiler, prefs, plan: DevicePlan, library, model, manifest, weight_file, max_num_seqs=None
):
    """The fused native code predictor if native_plan chooses it and it builds, else None (the plugin's
    graph); one log line either way, naming why. The frame reads `weight_file` (the graph's .bin) in place:
    it is asked for in 2 MiB pages (huge_pages.py). `plan.fused_up_to` says if it takes only the smaller
    batches (the loader then compiles the plugin's graph beside it for the rest, which it leaves out when
    engine.max_num_seqs `max_num_seqs` stays within the frame's bound)."""
    devices, isa = compiler.settings, library and library.isa
    weights = manifest.precision.get("code_predictor", "unknown")
    choice = choose_fused_code_predictor(devices, isa, prefs, compiler.available, weights, max_num_seqs)
    if not choice.wanted:
        log.info("code_predictor: the plugin's graph, not the fused native frame (%s)", choice.why)
        return None
    threads, spec = default_threads(devices.num_threads), manifest.spec.code_predictor
    try:
        build = lambda: fused_code_predictor(library, model, spec, threads)  # noqa: E731
        predictor = compiler.build("code_predictor", build)
    except (UnreadableTensors, ValueError, OSError) as exc:
        log.warning("code_predictor: the plugin's graph, the fused native frame cannot run: %s", exc)
        return None
    plan.placements["code_predictor"] = Placement("code_predictor", "CPU")
    plan.fused["code_predictor"] = predictor.isa
    if choice.up_to is not None:
        plan.fused_up_to["code_predictor"] = choice.up_to
    copy = "no compiled copy" if choice.up_to is None else "the plugin's graph for larger batches"
    huge = map_in_huge_pages(weight_file)
    log.info(
        "code_predictor: fused native frame (%s kernels, %d threads, %.0f MiB of the bundle's weights read "
        "in place, %.0f MiB of them mapped in 2 MiB pages, %s; %s)",
        predictor.isa,
        threads,
        predictor.mapped_weight_bytes / 2**20,
        huge / 2**20,
        copy,
        choice.why,
    )
    return predictor


def native_talker_or_none(
    compiler: PartCompiler, prefs, plan: DevicePlan, library, model, spec, settings, precision: dict[str, str]
):
    """The native talker if devices.native_talker asks for it and it builds, else None (the plugin's
    paged talker); one log line either way, naming why. `precision`: the manifest's, per component. Its KV
    pool follows the plugin's rule (kv_pool_blocks) with the native cache's block size and bytes per
    block."""
    devices = compiler.settings
    isa, weights = library and library.isa, precision.get("talker", "unknown")
    choice = choose_native_talker(
        devices, isa, prefs, compiler.available, settings.engine.max_num_seqs, weights
    )
    if not choice.wanted:
        log.info("talker: the plugin's paged graph, not the native step (%s)", choice.why)
        return None
    cache = native_talker.cache_precision(settings.engine.kv_cache_precision)
    per_block = native_talker.kv_bytes_per_block(spec.talker, cache)
    blocks = settings.engine.num_kv_blocks or kv_pool_blocks(per_block, native_talker.BLOCK_SIZE, settings)
    threads = default_threads(devices.num_threads)
    try:
        build = lambda: native_talker.build_native_talker(library, model, spec.talker, blocks, threads, cache)  # noqa: E731
        talker = compiler.build("talker", build)
    except (UnreadableTensors, ValueError, OSError) as exc:
        log.warning("talker: the plugin's paged graph, the native step cannot run: %s", exc)
        return None
    plan.placements["talker"] = Placement("talker", "CPU")
    plan.fused["talker"] = talker.isa
    log.info("talker: native step (%s kernels, %d threads; %s)", talker.isa, threads, choice.why)
    return talker
